"""Render the app on the demo fixture headless and save screenshots/*.svg.

``screenshots/bpftop.svg`` is the call tree; ``screenshots/bpftop-VIEW.svg``
shows each view (or feature) with the keys in ``demo_fixture.VIEW_KEYS``, the
same fixture and keys the SVG snapshot tests use.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fixture lives in tests/, beside this script's folder

from bpftop.tui.app.app import BpftopApp  # noqa: E402
from tests.tui.demo_fixture import (  # noqa: E402
    BASELINE_AFTER,
    BASELINE_KEYS,
    SCREEN_SIZE,
    VIEW_KEYS,
    demo_snapshot,
)
from tests.tui.fake_source import FakeSource  # noqa: E402


async def render(target: Path, keys: tuple[str, ...], after: tuple[str, ...] | None = None) -> None:
    """Press ``keys``; with ``after``, then deliver the later snapshot and press those."""
    source = FakeSource([demo_snapshot()])
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SCREEN_SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        if after is not None:
            source.push(demo_snapshot(2, later=True))
            await pilot.pause()
            await pilot.press(*after)
        await pilot.pause()
        app.save_screenshot(filename=target.name, path=str(target.parent))


async def render_all(directory: Path) -> list[Path]:
    written = [directory / "bpftop.svg"]
    await render(written[0], VIEW_KEYS["tree"])
    for view, keys in VIEW_KEYS.items():
        target = directory / f"bpftop-{view}.svg"
        await render(target, keys)
        written.append(target)
    for screen, after in BASELINE_AFTER.items():
        target = directory / f"bpftop-{screen}.svg"
        await render(target, BASELINE_KEYS, after)
        written.append(target)
    return written


def main() -> int:
    directory = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(render_all(directory)):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
