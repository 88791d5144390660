"""The screens of screenshots/ and of the SVG snapshot tests: one table for both.

The live screens (the call tree with the live header, Python, Diagnostics,
Threads, file:line) replay real live sessions, the bundled demo workload and
a Python program, recorded by ``scripts/record_session.py``
(``screenshots/live-demo.json``, ``live-python.json``): every tick's header
figures, then the last snapshot whole, as the collector delivered them. The
others come from a real recording of the demo (``scripts/record_demo.sh``:
``screenshots/demo.speedscope.json``, and ``demo-before.speedscope.json`` for
the diff), opened through the code of ``bpftop view`` and ``bpftop diff``
(:func:`bpftop.tui.cli.files.saved_snapshots`, :func:`~bpftop.tui.cli.files.view_app`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.cli.files import saved_snapshots, view_app
from bpftop.tui.formats.snapshot_file import read_session
from tests.tui.fake_source import FakeSource

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "screenshots" / "demo.speedscope.json"
BEFORE = ROOT / "screenshots" / "demo-before.speedscope.json"
SESSIONS = {name: ROOT / "screenshots" / f"{name}.json" for name in ("live-demo", "live-python")}
SCREEN_SIZE = (120, 36)


@dataclass(frozen=True)
class Screen:
    """``source``: "view" (the recording), "diff" (before -> recording) or a
    live session of ``SESSIONS``; ``keys`` pressed once it is shown."""

    source: str
    keys: tuple[str, ...] = ()


SCREENS: dict[str, Screen] = {
    "tree": Screen("live-demo"),
    "python": Screen("live-python"),
    "top": Screen("view", ("1",)),
    "top-inline": Screen("view", ("1", "i")),
    "callers": Screen("view", ("1", "home", "down", "down", "down", "down", "3")),
    "flame": Screen("view", ("4",)),
    "zoom": Screen("view", ("home", "down", "down", "down", "down", "down", "down", "enter")),
    "search": Screen("view", ("slash", "w", "r", "i", "t", "e", "enter", "f")),
    "baseline-tree": Screen("diff"),
    "baseline-top": Screen("diff", ("1",)),
    "diagnostics": Screen("live-demo", ("5",)),
    "threads": Screen("live-demo", ("6",)),
    "source": Screen("live-demo", ("L",)),
}
"""screenshots/bpftop-NAME.svg for each NAME (and bpftop.svg: "tree")."""


def screen_app(screen: Screen) -> BpftopApp:
    """The app showing ``screen``'s profile, before its keys are pressed."""
    if screen.source in SESSIONS:
        snapshots, _ = read_session(SESSIONS[screen.source])
        return BpftopApp(FakeSource(snapshots), 1.0)
    snap, base = saved_snapshots(RECORDING, BEFORE if screen.source == "diff" else None)
    return view_app(snap, base)
