"""Render the screens of ``tests/tui/screens.py`` headless into screenshots/*.svg.

``screenshots/bpftop.svg`` is the call tree; ``screenshots/bpftop-NAME.svg``
shows each screen with its keys pressed, the same screens and keys the SVG
snapshot tests use. The call tree, Python, Diagnostics, Threads and
file:line replay real live sessions (``scripts/record_session.py`` records
them: ``screenshots/live-*.json``); the others show the real recording of the
demo workload (``scripts/record_demo.sh``) as ``bpftop view`` and ``bpftop
diff`` open it. Notifications are cleared before a screen is saved: a toast
would hide part of the view it is a picture of.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the screens live in tests/, beside this script's folder

from tests.tui.screens import SCREEN_SIZE, SCREENS, Screen, screen_app  # noqa: E402


async def render(target: Path, screen: Screen) -> None:
    """Show ``screen``, press its keys, save the SVG."""
    app = screen_app(screen)
    async with app.run_test(size=SCREEN_SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*screen.keys)
        await pilot.pause()
        app.clear_notifications()
        await pilot.pause()
        app.save_screenshot(filename=target.name, path=str(target.parent))


async def render_all(directory: Path) -> list[Path]:
    written = [directory / "bpftop.svg"]
    await render(written[0], SCREENS["tree"])
    for name, screen in SCREENS.items():
        target = directory / f"bpftop-{name}.svg"
        await render(target, screen)
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
