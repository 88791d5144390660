"""The screens of screenshots/ and of the SVG snapshot tests: one table for both.

Most come from a real recording of the bundled demo workload
(``scripts/record_demo.sh``: ``screenshots/demo.speedscope.json``, and
``demo-before.speedscope.json`` for the diff), opened through the code of
``bpftop view`` and ``bpftop diff`` (:func:`bpftop.tui.cli.files.saved_snapshots`,
:func:`~bpftop.tui.cli.files.view_app`). The live-only screens (Diagnostics,
Threads, file:line) cannot come from a saved profile: they show the demo
fixture (:mod:`tests.tui.demo_fixture`), synthetic numbers with the program's
own strings, and docs/screenshots.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.cli.files import saved_snapshots, view_app
from tests.tui.demo_fixture import demo_snapshot
from tests.tui.fake_source import FakeSource

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "screenshots" / "demo.speedscope.json"
BEFORE = ROOT / "screenshots" / "demo-before.speedscope.json"
SCREEN_SIZE = (120, 36)


@dataclass(frozen=True)
class Screen:
    """``source``: "view" (the recording), "diff" (before -> recording) or
    "fixture" (synthetic live facts); ``keys`` pressed once it is shown."""

    source: str
    keys: tuple[str, ...] = ()


SCREENS: dict[str, Screen] = {
    "tree": Screen("view"),
    "top": Screen("view", ("1",)),
    "top-inline": Screen("view", ("1", "i")),
    "callers": Screen("view", ("1", "home", "down", "down", "down", "down", "3")),
    "flame": Screen("view", ("4",)),
    "zoom": Screen("view", ("home", "down", "down", "down", "down", "down", "down", "enter")),
    "search": Screen("view", ("slash", "w", "r", "i", "t", "e", "enter", "f")),
    "baseline-tree": Screen("diff"),
    "baseline-top": Screen("diff", ("1",)),
    "diagnostics": Screen("fixture", ("5",)),
    "threads": Screen("fixture", ("6",)),
    "source": Screen("fixture", ("e", "L")),
}
"""screenshots/bpftop-NAME.svg for each NAME (and bpftop.svg: "tree")."""


def screen_app(screen: Screen) -> BpftopApp:
    """The app showing ``screen``'s profile, before its keys are pressed."""
    if screen.source == "fixture":
        return BpftopApp(FakeSource([demo_snapshot()]), 1.0)
    snap, base = saved_snapshots(RECORDING, BEFORE if screen.source == "diff" else None)
    return view_app(snap, base)
