"""Random key sequences, probe switches among them, never end in an internal error.

A seeded random loop (each seed a few hundred keys, reproducible) drives the
app on a source that answers probe switches as the collector does: the new
probe's profile starts empty, then fills; a stale derive job may finish after
the switch. Python frames make ``G``/``P`` regroup, kernel frames ``K``/``U``.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest

from bpftop.symbols.frame import Frame
from bpftop.tui.app import app as app_module
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Phase, Snapshot, ThreadShare
from bpftop.tui.model.viewstate import Derived, derive_view
from tests.tui.fake_source import FakeSource

from .helpers import PROCESS, notifications
from .test_probe_dialog import fake_completer

SIZE = (100, 30)
PY = "/srv/job.py"
KEYS = (
    "1", "2", "3", "4", "5", "6", "tab", "shift+tab", "e", "enter", "backspace", "escape",
    "f", "G", "P", "K", "U", "I", "i", "L", "m", "r", "b", "space", "a", "n", "N",
    "down", "up", "home", "end", "left", "right", "pagedown", "plus", "s", "S",
)  # fmt: skip
"""App and view keys (not q, ctrl+c); ``/`` and ``p`` come with their text."""
SEARCHES = ("parse", "main", "zzz", "")
PROBES = ("offcpu", "profile:hz:99", "tracepoint:sched:sched_switch", "uprobe:small:leaf_a")


def frame(name: str, line: int = 0) -> Frame:
    if line:
        return Frame(f"{name} ({PY}:{line})", PY, 0)
    kernel = name.startswith("k_")
    return Frame(name, "[kernel]" if kernel else "/usr/bin/python3.11", 0x10, kernel=kernel)


def stacks_for(probe: str) -> list[tuple[tuple[Frame, ...], int]]:
    base = (frame("_start"), frame("main", 1), frame("run", 9))
    if probe == "offcpu":
        return [((*base, frame("wait", 30), frame("k_schedule")), 900_000)]
    return [
        ((*base, frame("parse_records", 6)), 40),
        ((*base, frame("parse_records", 5)), 16),
        ((*base, frame("parse_records", 5), frame("k_irq")), 1),
        ((*base, frame("write_out", 12), frame("k_sys_write")), 9),
        ((frame("_start"), frame("main", 2)), 3),
    ]


class SwitchingSource(FakeSource):
    """Answers a probe switch with the new probe's empty profile at once."""

    def __init__(self) -> None:
        super().__init__()
        self.probe = "profile:hz:99"
        self.used = [self.probe]
        self.profiles: dict[str, Profile] = {}
        self.seq = 0

    def switch_probe(self, text: str) -> None:
        super().switch_probe(text)
        self.probe = text
        if text not in self.used:
            self.used.append(text)
        self.profiles.setdefault(text, Profile())
        self.tick(fill=False)

    def tick(self, fill: bool = True) -> None:
        profile = self.profiles.setdefault(self.probe, Profile())
        if fill:
            for frames, count in stacks_for(self.probe):
                profile.add("python3", frames, count)
        self.seq += 1
        stats = CollectionStats(probe=self.probe, total_samples=profile.total_samples)
        snap = Snapshot(
            seq=self.seq, phase=Phase.SAMPLING, stats=stats, process=PROCESS,
            tree=profile.tree(), hot=profile.hot_functions(200), probes=tuple(self.used),
            weight_unit="ns" if self.probe == "offcpu" else "",
            threads=(ThreadShare(99, "python3", profile.total_samples),),
        )  # fmt: skip
        self.push(snap)


def internal_errors(app: BpftopApp) -> list[str]:
    return [n.message for n in notifications(app) if "internal error" in (n.title + n.message)]


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_keys_and_probe_switches_raise_no_internal_error(
    seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    source = SwitchingSource()
    app = BpftopApp(source, 1.0, export_dir=tmp_path, completer=fake_completer())
    async with app.run_test(size=SIZE) as pilot:
        if seed != 1:
            app.deriving.sync_wait_s = 0  # every derive job on the worker: switches race them
        source.tick()
        await pilot.pause()
        pressed: list[str] = []
        for _ in range(80):
            roll = rng.random()
            if roll < 0.15:
                source.tick()
                keys: tuple[str, ...] = ()
            elif roll < 0.25:
                keys = ("p", *rng.choice(PROBES), "enter")
            elif roll < 0.3:
                keys = ("slash", *rng.choice(SEARCHES), "enter")
            elif roll < 0.32:
                keys = ("question_mark", "escape")
            else:
                keys = (rng.choice(KEYS),)
            pressed += keys
            await pilot.press(*keys)
            if rng.random() < 0.3:
                await pilot.pause()
            assert app.is_running and app.crash is None, pressed
            assert not internal_errors(app), (internal_errors(app), pressed)
        for _ in range(20):  # let every job finish
            await pilot.pause(0.02)
        assert not internal_errors(app), pressed
        assert app.crash is None


async def test_a_running_derive_job_never_shows_the_old_probe_under_the_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = SwitchingSource()
    app = BpftopApp(source, 1.0, completer=fake_completer())
    release = threading.Event()
    derive = derive_view

    def held(*args: Any, **kwargs: Any) -> Derived:
        release.wait(5)
        return derive(*args, **kwargs)

    async with app.run_test(size=SIZE) as pilot:
        source.tick()
        await pilot.pause()
        await pilot.press("slash", *"parse", "enter", "f")  # a filtered view: made by a job
        await pilot.pause()
        assert app.views.tree_view.call_tree.total_count == 57
        monkeypatch.setattr(app_module, "derive_view", held)
        app.deriving.sync_wait_s = 0
        await pilot.press("p", *"uprobe:small:leaf_a", "enter")  # its profile: empty yet
        await pilot.pause()
        assert app.deriving.busy and app.shown is not None
        assert app.shown.stats.probe == "uprobe:small:leaf_a"
        assert app.views.tree_view.call_tree.total_count == 0, "the old probe's tree shown"
        await pilot.press("1")
        assert app.views.top_view.functions == ()  # nor its functions
        await pilot.press("2")
        release.set()
        source.tick()
        for _ in range(20):
            await pilot.pause(0.02)
        assert not app.deriving.busy and not internal_errors(app)
        assert app.views.tree_view.call_tree.total_count == 57
