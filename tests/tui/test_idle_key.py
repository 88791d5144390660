"""Pilot test of ``I``: idle Python samples hidden by default (the crumbs say
how much), shown on ``I``, hidden again on a second ``I``; the Threads view
leaves an idle-only thread out until then."""

from __future__ import annotations

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.model.snapshot import CollectionStats, Phase, Snapshot, ThreadShare
from bpftop.tui.model.timemode import TimedProfile
from bpftop.tui.views.threads import ThreadsView
from tests.model.test_idle import APP, THREADING, native, py
from tests.tui.fake_source import FakeSource

from .helpers import PROCESS, SIZE, crumbs, top_column


def _snapshot() -> Snapshot:
    profile = TimedProfile()
    wait = (py("pool_worker", APP, 10), py("Condition.wait", THREADING, 324), native("futex"))
    profile.add("app", wait, 3, tid=11)
    profile.add("app", (py("work", APP, 20), native("clock_nanosleep")), 1, tid=10)
    current = profile.current
    return Snapshot(
        seq=1,
        phase=Phase.SAMPLING,
        stats=CollectionStats(probe="offcpu", total_samples=4),
        process=PROCESS,
        tree=current.tree(),
        hot=current.hot_functions(200),
        threads=profile.thread_shares({10: "main", 11: "pool"}),
    )


def _threads(app: BpftopApp) -> list[ThreadShare]:
    return list(app.query_one("#threads", ThreadsView).threads)


async def test_I_shows_and_hides_idle_samples_and_the_crumbs_say_how_much() -> None:
    app = BpftopApp(FakeSource([_snapshot()]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1")
        for _ in range(100):  # the idle samples are dropped on the derive worker
            if "idle hidden" in crumbs(app):
                break
            await pilot.pause(0.02)
        assert "idle hidden 75% (I)" in crumbs(app)
        assert not any("Condition.wait" in name for name in top_column(app, 3))
        await pilot.press("6")
        assert [(t.tid, t.samples) for t in _threads(app)] == [(10, 1)]
        await pilot.press("I")
        await pilot.pause()
        assert [t.tid for t in _threads(app)] == [11, 10]
        await pilot.press("1")
        for _ in range(100):
            if any("Condition.wait" in name for name in top_column(app, 3)):
                break
            await pilot.pause(0.02)
        assert any("Condition.wait" in name for name in top_column(app, 3))
        assert "idle hidden" not in crumbs(app)
        await pilot.press("I")
        for _ in range(100):
            if "idle hidden" in crumbs(app):
                break
            await pilot.pause(0.02)
        assert "idle hidden 75% (I)" in crumbs(app)
