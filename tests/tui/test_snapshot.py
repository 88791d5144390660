"""SVG snapshot of the app on the deterministic demo fixture."""

from __future__ import annotations

from typing import Any

from bpftop.tui.app import BpftopApp
from bpftop.tui.demo_fixture import DEMO_KEYS, SCREEN_SIZE, demo_snapshot
from bpftop.tui.source import FakeSource


def test_demo_screen(snap_compare: Any) -> None:
    app = BpftopApp(FakeSource([demo_snapshot()]), 1.0)
    assert snap_compare(app, press=DEMO_KEYS, terminal_size=SCREEN_SIZE)
