"""The live view's F key: C++ names short or in full, asked of the source
(counts start again there); a saved profile says it keeps its names."""

from __future__ import annotations

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.app.help import HelpScreen
from bpftop.tui.collect.snapshot_source import ErrorCallback, SnapshotCallback
from tests.tui.demo_fixture import demo_snapshot

from .helpers import SIZE, demo_app, notifications


async def test_f_switches_the_sources_names_both_ways() -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("F")
        await pilot.pause()
        assert source.short_names and source.short_name_requests == [True]
        assert "short" in str(notifications(app)[-1].message)
        await pilot.press("F")
        await pilot.pause()
        assert source.short_name_requests == [True, False]
        assert "in full" in str(notifications(app)[-1].message)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


class _SavedProfile:
    """A source without name control (as a saved profile's)."""

    def start(self, on_snapshot: SnapshotCallback, on_error: ErrorCallback) -> None:
        on_snapshot(demo_snapshot())

    def stop(self) -> None:
        pass


async def test_a_saved_profile_keeps_its_names() -> None:
    app = BpftopApp(_SavedProfile(), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("F")
        await pilot.pause()
        assert "keeps the names" in str(notifications(app)[-1].message)
