"""A probe switch keeps what the user chose: the thread shown and the time
mode carry into the new probe's profile (a probe used before, too), so the
header never waits for them ("switching…") after a switch.

The source here is the fake one, with the collector's own bookkeeping behind
it (``ProbeProfiles`` and ``Commands``, applied between "ticks" as the
collector applies them), so the snapshots say what the collector would."""

from __future__ import annotations

import dataclasses

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.collect.probe_profiles import ProbeProfiles
from bpftop.tui.model.timemode import Commands, TimeMode, TimeSetting
from tests.tui.fake_source import FakeSource

from .helpers import BASE, SIZE, f, header, snapshot_of

FIRST, SECOND = "profile:hz:99", "uprobe:small:leaf_a"


class ProfilesSource(FakeSource):
    """Requests go through a real ``ProbeProfiles`` as in the collector; ``tick``
    posts the snapshot the collector would post next."""

    def __init__(self) -> None:
        super().__init__()
        self.profiles = ProbeProfiles(FIRST, weighted=False)
        self.commands = Commands()
        self._seq = 0

    def set_time_mode(self, setting: TimeSetting) -> None:
        super().set_time_mode(setting)
        self.commands.request_mode(setting)

    def select_thread(self, tid: int | None) -> None:
        super().select_thread(tid)
        self.commands.request_thread(tid)

    def switch_probe(self, text: str) -> None:
        super().switch_probe(text)
        self.profiles.use(text, weighted=False)

    def tick(self) -> None:
        self.commands.apply(self.profiles.active.profile)
        profile = self.profiles.active.profile
        for tid in (7, 8):
            profile.add("small", (f("main"), f(f"thread_{tid}")), 5, tid, ())
        profile.end_tick(1.0)
        self._seq += 1
        snap = snapshot_of(BASE, seq=self._seq)
        self.push(
            dataclasses.replace(
                snap,
                stats=dataclasses.replace(snap.stats, probe=self.profiles.active_spec),
                time_mode=profile.label,
                probes=self.profiles.specs,
            )
        )


async def test_a_probe_switch_keeps_the_thread_and_the_time_mode() -> None:
    source = ProfilesSource()
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        source.tick()
        await pilot.pause()
        app.select_thread(7)
        await pilot.press("m")  # last 30 s
        source.tick()
        await pilot.pause()
        assert "⏱ last 30s, thread 7" in header(app) and "switching" not in header(app)

        source.switch_probe(SECOND)  # what Enter in the probe dialog does
        source.tick()
        await pilot.pause()
        assert app.shown is not None and app.shown.stats.probe == SECOND
        assert app.shown.time_mode == "last 30s, thread 7"
        assert "switching" not in header(app)

        await pilot.press("m")  # decay, on the second probe
        app.select_thread(8)
        source.tick()
        source.switch_probe(FIRST)  # back to a probe used before: it takes them too
        source.tick()
        await pilot.pause()
        assert app.shown is not None and app.shown.stats.probe == FIRST
        assert app.shown.time_mode == app.mode_label == "decay ½ every 10s, thread 8"
        assert "switching" not in header(app)


def test_probe_profiles_carry_mode_and_thread_into_new_and_old_probes() -> None:
    profiles = ProbeProfiles(FIRST, weighted=False)
    window = TimeSetting(TimeMode.WINDOW)
    profiles.active.profile.set_mode(window)
    profiles.active.profile.select_thread(3)
    new = profiles.use(SECOND, weighted=True)
    assert (new.profile.setting, new.profile.thread) == (window, 3)
    new.profile.set_mode(TimeSetting())
    new.profile.select_thread(None)
    old = profiles.use(FIRST, weighted=False)
    assert (old.profile.setting, old.profile.thread) == (TimeSetting(), None)
    assert old.profile.label == "cumulative" and profiles.specs == (FIRST, SECOND)
