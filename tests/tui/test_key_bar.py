"""``? Help`` is the key bar's first item in every view at any width; at 80
columns the call tree's names get their room before the module column; the
Threads view's columns line up under their titles."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from bpftop.tui.app.key_bar import KeyBar

from .helpers import demo_app


@pytest.mark.parametrize("width", [80, 160])
async def test_help_is_the_first_key_in_every_view(width: int) -> None:
    app, _ = demo_app()
    async with app.run_test(size=(width, 30)) as pilot:
        await pilot.pause()
        for key in "123456":
            await pilot.press(key)
            await pilot.pause()
            bar = str(app.query_one("#keys", KeyBar).render())
            assert bar.startswith("? Help"), (key, bar)
            assert str(app.query_one("#keys", Static).content).startswith("? Help")


async def test_names_get_room_before_modules_at_80_columns() -> None:
    app, _ = demo_app()
    async with app.run_test(size=(80, 30)) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        rows = [tree.render_line(y).text for y in range(len(tree.rows))]
        deep = next(line for line in rows if "mix_round" in line)
        assert "mix_round" in deep and "demo" in deep  # the name whole, the module shown
        name_end = deep.index("mix_round") + len("mix_round")
        module_at = deep.rindex("demo")
        assert module_at - name_end > 10
        assert module_at >= 60, "names get 48 cells of the 78 before the module column"
        libc = next(line for line in rows if "__libc_start_main" in line)
        assert "__libc_start_main" in libc and "libc.so" in libc


async def test_threads_columns_line_up_under_their_titles() -> None:
    app, _ = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("6")
        await pilot.pause()
        view = app.query_one("#threads")
        title = view.header_line(0, 96).plain  # type: ignore[attr-defined]
        rows = [view.row_line(i, 96).plain for i in range(2)]  # type: ignore[attr-defined]
        for word, cells in (("tid", ("4242", "4243")), ("samples", ("9,325", "283"))):
            end = title.index(word) + len(word)  # right-aligned under the title
            assert [row.index(cell) + len(cell) for row, cell in zip(rows, cells, strict=True)] == [
                end,
                end,
            ]
        end = title.index("share") + len("share")
        assert [row.index("%") + 1 for row in rows] == [end, end]
        assert rows[0].index("demo") == rows[1].index("compressor") == title.index("name")
