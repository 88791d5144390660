"""SVG snapshots of every screen of screenshots/ (``tests/tui/screens.py``: the
recorded demo workload through ``bpftop view``/``diff``, the live screens replaying
real live sessions) at two sizes, and of the live baseline (``b``, then a later tick)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from bpftop.tui.app.app import BpftopApp
from tests.tui.demo_fixture import BASELINE_AFTER, BASELINE_KEYS, demo_snapshot
from tests.tui.fake_source import FakeSource
from tests.tui.screens import SCREENS, screen_app

SIZES = {"80x24": (80, 24), "200x50": (200, 50)}


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("name", sorted(SCREENS))
def test_screen(snap_compare: Any, name: str, size: str) -> None:
    screen = SCREENS[name]
    assert snap_compare(screen_app(screen), press=screen.keys, terminal_size=SIZES[size])


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("screen", sorted(BASELINE_AFTER))
def test_baseline_screen(snap_compare: Any, screen: str, size: str) -> None:
    source = FakeSource([demo_snapshot()])

    async def freeze_then_tick(pilot: Pilot[None]) -> None:
        await pilot.press(*BASELINE_KEYS)
        source.push(demo_snapshot(2, later=True))
        await pilot.pause()
        await pilot.press(*BASELINE_AFTER[screen])

    app = BpftopApp(source, 1.0)
    assert snap_compare(app, run_before=freeze_then_tick, terminal_size=SIZES[size])
