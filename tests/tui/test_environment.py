"""The environment the screen runs in: NO_COLOR (set, even empty) gives a grey
screen, never a crash; TERM=dumb is refused in one line before anything starts."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from bpftop.tui.widgets.monochrome import Monochrome
from tests.conftest import BPFTOP

from .helpers import SIZE, demo_app

COLOUR = re.compile(r"#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})\b")
CHROME = re.compile(r'<circle[^>]*>|<text class="[^"]*-title"[^>]*>|#c5c8c6|#868887')
"""The screenshot's window (buttons, title) and its default text colour, plain
and dimmed (the export blends it): not colours the screen asked for."""


def colours(svg: str) -> set[tuple[str, ...]]:
    """The colours the screen's content uses in a screenshot."""
    return {m.groups() for m in COLOUR.finditer(CHROME.sub("", svg.lower()))}


@pytest.mark.parametrize("value", ["1", ""], ids=["NO_COLOR=1", "NO_COLOR-empty"])
async def test_no_color_gives_a_grey_screen_in_every_view(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("NO_COLOR", value)
    app, _ = demo_app()
    screens = []
    async with app.run_test(size=SIZE) as pilot:
        for key in "123456":
            await pilot.press(key)
            await pilot.pause()
            screens.append(app.export_screenshot())
        await pilot.press("p")  # a dialog
        await pilot.pause()
        screens.append(app.export_screenshot())
    assert app.crash is None and not app.return_code
    assert any(isinstance(f, Monochrome) for f in app.get_line_filters())
    used = set().union(*map(colours, screens))
    assert used, "the screenshots name their colours"
    assert all(r == g == b for r, g, b in used), sorted(c for c in used if len(set(c)) > 1)


async def test_colours_stay_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    """(The grey check above can fail: the demo screen has colours otherwise.)"""
    monkeypatch.delenv("NO_COLOR", raising=False)
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        svg = app.export_screenshot()
    assert any(not r == g == b for r, g, b in colours(svg))


def test_term_dumb_is_refused_in_one_line(tmp_path: Path) -> None:
    saved = tmp_path / "p.folded"
    saved.write_text("main;work 3\n")
    master, slave = os.openpty()
    try:
        done = subprocess.run(
            [str(BPFTOP), "view", str(saved)], stdin=slave, stdout=slave,
            stderr=subprocess.PIPE, text=True, timeout=60, env={**os.environ, "TERM": "dumb"},
        )  # fmt: skip
    finally:
        os.close(master)
        os.close(slave)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "TERM=dumb" in lines[0] and "Traceback" not in done.stderr
