"""Names holding control characters reach the terminal spelled out (``^[``,
``^?``, ``\\x85``), never raw: in every view, the header, the crumbs and the
notifications (a profiled program chooses its function names)."""

from __future__ import annotations

import re
from dataclasses import replace

from rich.segment import Segment
from textual.color import Color

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.model.snapshot import ThreadShare
from bpftop.tui.widgets.line import Line, fit
from bpftop.tui.widgets.visible import VisibleControls, visible
from tests.tui.fake_source import FakeSource

from .helpers import PROCESS, SIZE, snapshot_of

EVIL = "\x1b[41mEVIL\x1b[0m"
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


def test_visible_spells_c0_del_and_c1() -> None:
    assert visible(EVIL) == "^[[41mEVIL^[[0m"
    assert visible("a\tb\nc\x00\x7f\x85\x9b") == "a^Ib^Jc^@^?\\x85\\x9b"
    plain = "main::hot_loop<…>"
    assert visible(plain) is plain
    assert visible("café ▲") == "café ▲"


def test_lines_spell_names_and_count_what_is_shown() -> None:
    line = Line().add(EVIL)
    assert line.plain == "^[[41mEVIL^[[0m" and line.cells == len("^[[41mEVIL^[[0m")
    assert Line().add_fit("\x1bab", 4).plain == "^[ab"
    assert fit("\x1b\x1b\x1b", 4) == "^[^…"


def test_the_app_wide_filter_keeps_the_line_width() -> None:
    segments = [Segment("ab\x1bc"), Segment("  ")]  # 5 cells as counted, ESC none
    spelled = VisibleControls().apply(segments, Color(0, 0, 0))
    assert "".join(s.text for s in spelled) == "ab^[c"
    plain = [Segment("fine")]
    assert VisibleControls().apply(plain, Color(0, 0, 0)) is plain


def screen_lines(app: BpftopApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def test_no_view_writes_a_control_character() -> None:
    stacks = [(["main", EVIL, "del\x7fname"], 6), (["main", "tab\there", "c1\x85x"], 3)]
    snap = snapshot_of(stacks)
    snap = replace(
        snap,
        process=replace(PROCESS, name="ev\x1bil", cmdline="./ev\x1b]0;owned\x07il"),
        threads=(ThreadShare(tid=99, name="t\x1b[2Jx", samples=9),),
        message="gone \x1b[31m",
    )
    app = BpftopApp(FakeSource([snap]), 1.0)
    seen: list[str] = []
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        app.notify(f"probe {EVIL}", title="t\x1b")
        await pilot.pause()
        for key in "123456":
            await pilot.press(key)
            await pilot.pause()
            lines = screen_lines(app)
            raw = [line for line in lines if CONTROLS.search(line)]
            assert not raw, (key, raw)
            seen.extend(lines)
    screen = "\n".join(seen)
    assert "^[[41mEVIL^[[0m" in screen
    for spelled in ("del^?name", "tab^Ihere", "c1\\x85x", "ev^[il", "t^[[2Jx", "probe ^[[41mEVIL"):
        assert spelled in screen, spelled


def test_one_line_errors_spell_names_too() -> None:
    from bpftop.base.errors import UsageError

    err = UsageError(f"no function '{EVIL}' in /bin/x", "near: a\nb")
    assert str(err) == "no function '^[[41mEVIL^[[0m' in /bin/x (near: a^Jb)"


async def test_notifications_are_text_not_markup() -> None:
    """A search pattern or a path with ``[/x]`` in a notification ended the app."""
    app = BpftopApp(FakeSource([snapshot_of([(["main"], 1)])]), 1.0)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        app.notify("no match for /[/x]/ here", title="[b]search")
        for _ in range(20):
            await pilot.pause(0.05)
            screen = "\n".join(screen_lines(app))
            if "no match" in screen:
                break
        assert "no match for /[/x]/ here" in screen and "[b]search" in screen
    assert app.return_code in (None, 0)
