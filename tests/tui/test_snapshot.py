"""SVG snapshots of every view on the deterministic demo fixture, at two sizes."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from bpftop.tui.app.app import BpftopApp
from tests.tui.demo_fixture import BASELINE_AFTER, BASELINE_KEYS, VIEW_KEYS, demo_snapshot
from tests.tui.fake_source import FakeSource

SIZES = {"80x24": (80, 24), "200x50": (200, 50)}


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("view", sorted(VIEW_KEYS))
def test_view_screen(snap_compare: Any, view: str, size: str) -> None:
    app = BpftopApp(FakeSource([demo_snapshot()]), 1.0)
    assert snap_compare(app, press=VIEW_KEYS[view], terminal_size=SIZES[size])


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
