"""Render the app on the demo fixture headless and save screenshots/bpftop.svg."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bpftop.tui.app import BpftopApp
from bpftop.tui.demo_fixture import DEMO_KEYS, SCREEN_SIZE, demo_snapshot
from bpftop.tui.source import FakeSource

ROOT = Path(__file__).resolve().parent.parent


async def render(target: Path) -> None:
    app = BpftopApp(FakeSource([demo_snapshot()]), 1.0)
    async with app.run_test(size=SCREEN_SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*DEMO_KEYS)
        await pilot.pause()
        app.save_screenshot(filename=target.name, path=str(target.parent))


def main() -> int:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "screenshots" / "bpftop.svg"
    target.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(render(target))
    print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
