"""The row views' drawing: ``Line`` pieces, and what a key press redraws."""

from __future__ import annotations

from rich.style import Style
from textual.events import MouseScrollDown, MouseScrollUp
from textual.strip import Strip

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.widgets.line import Line, fit
from bpftop.tui.widgets.lines_view import CachedLinesView
from tests.tui.fake_source import FakeSource

from .helpers import snapshot_of

RED = Style(color="red")
CURSOR = Style(bgcolor="blue")


def test_fit_pads_or_cuts_with_an_ellipsis() -> None:
    assert fit("abc", 5) == "abc  "
    assert fit("abc", 5, "right") == "  abc"
    assert fit("abcdef", 4) == "abc…"
    assert fit("漢字漢字", 5) == "漢字…", "wide characters count two cells"
    assert fit("abc", 0) == ""


def test_cut_ends_the_cut_piece_with_an_ellipsis_and_keeps_styles() -> None:
    line = Line().add("12.5% ").add("handle_request", RED).add(" demo")
    cut = line.cut(12)
    assert cut.plain == "12.5% handl…"
    assert cut.cells == 12
    assert [s.style for s in cut.segments] == [None, RED]


def test_cut_at_a_piece_boundary_still_shows_something_was_cut() -> None:
    assert Line().add("abc").add("def").cut(3).plain == "ab…"
    assert Line().add("abc").add("def").cut(6).plain == "abcdef"
    assert Line().add("ab").cut(5).plain == "ab   ", "shorter lines are padded"


def test_strip_lays_the_cursor_over_every_piece_and_the_padding() -> None:
    strip = Line().add("main", RED).add(" x").strip(10, CURSOR)
    assert isinstance(strip, Strip)
    assert strip.cell_length == 10
    assert strip.text == "main x    "
    assert all(s.style is not None and s.style.bgcolor == CURSOR.bgcolor for s in strip)
    first = next(iter(strip)).style
    assert first is not None and first.color == RED.color


def test_strip_cuts_a_line_longer_than_the_screen() -> None:
    strip = Line().add("x" * 30).strip(10)
    assert strip.text == "x" * 9 + "…"
    assert strip.cell_length == 10


WIDE = [(["main", f"fn_{i:03}"], 200 - i) for i in range(120)]


def counting_draws(view: CachedLinesView) -> list[int]:
    """Screen lines ``view`` draws from now on (its line cache's misses)."""
    drawn: list[int] = []
    draw = view.draw_line

    def counted(y: int, width: int) -> Strip:
        drawn.append(y)
        return draw(y, width)

    view.draw_line = counted  # type: ignore[method-assign]
    return drawn


async def test_a_cursor_move_draws_only_the_two_rows_it_changes() -> None:
    app = BpftopApp(FakeSource([snapshot_of(WIDE)]), 1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        await pilot.press("right", "down")  # the hot path ends on main (no callee is a tenth of it)
        await pilot.pause()
        drawn = counting_draws(tree)
        await pilot.press("home", "down")
        await pilot.pause()
        assert tree.cursor == 1
        assert sorted(set(drawn)) == [0, 1, 2], "rows 0-2: the cursor was on row 2 (e)"
        drawn.clear()
        await pilot.press("down")
        await pilot.pause()
        assert sorted(set(drawn)) == [1, 2]


async def test_rows_out_of_sight_show_their_range_and_the_wheel_scrolls() -> None:
    app = BpftopApp(FakeSource([snapshot_of(WIDE)]), 1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        await pilot.press("down", "right")  # main's 120 callees
        await pilot.pause()
        height = tree.scrollable_content_region.height
        rows = len(tree.rows)
        assert rows == 122
        assert str(tree.border_subtitle) == f"rows 1-{height} of {rows}"
        await pilot.press("end")
        await pilot.pause()
        assert str(tree.border_subtitle) == f"rows {rows - height + 1}-{rows} of {rows}"
        top = round(tree.scroll_y)
        tree.post_message(MouseScrollUp(tree, 1, 1, 0, -1, 0, False, False, False))
        await pilot.pause()
        assert round(tree.scroll_y) == top - CachedLinesView.WHEEL_LINES
        assert str(tree.border_subtitle).startswith(f"rows {top - 2}-")
        tree.post_message(MouseScrollDown(tree, 1, 1, 0, 1, 0, False, False, False))
        await pilot.pause()
        assert round(tree.scroll_y) == top
        assert "fn_119" in tree.render_line(height - 1).text, "the last row at the bottom"


async def test_no_range_when_every_row_fits() -> None:
    app = BpftopApp(FakeSource([snapshot_of(WIDE[:5])]), 1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert not app.views.tree_view.border_subtitle


async def test_a_view_switch_draws_each_line_of_the_view_once() -> None:
    """Focus, the followed selection and the scroll are settled before the view is drawn."""
    app = BpftopApp(FakeSource([snapshot_of(WIDE)]), 1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        await pilot.press("down", "right", "end", "1", "home", "down", "down")
        await pilot.pause()
        drawn = counting_draws(tree)
        await pilot.press("2")
        await pilot.pause()
        height = tree.scrollable_content_region.height
        assert tree.rows[tree.cursor].node.label == "fn_002", "the Top view's selection"
        assert sorted(drawn) == list(range(height)), "each line once, not twice"
        flame_drawn = counting_draws(app.views.flame_view)
        await pilot.press("4")
        await pilot.pause()
        assert app.views.flame_view.selected[-1][0] == "fn_002"
        assert sorted(flame_drawn) == list(range(app.views.flame_view.size.height))


async def test_a_focus_change_draws_only_the_cursor_row() -> None:
    app = BpftopApp(FakeSource([snapshot_of(WIDE)]), 1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        await pilot.press("e")
        await pilot.pause()
        drawn = counting_draws(tree)
        await pilot.press("slash")  # the search box takes the focus
        await pilot.pause()
        assert not tree.has_focus
        assert drawn == [tree.cursor], "the cursor row turns to the blurred cursor"
        assert app.search_input.has_focus
        drawn.clear()
        await pilot.press("escape")
        await pilot.pause()
        assert tree.has_focus and drawn == [tree.cursor]
