"""Pilot tests of the views and their keys: top, tree zoom, callers, flame, diagnostics,
search / filter, the file:line toggle, and export of a zoomed or filtered profile."""

from __future__ import annotations

from dataclasses import replace

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.model.snapshot import PythonCounts
from bpftop.tui.views.diagnostics import DiagnosticsView
from bpftop.tui.views.threads import ThreadsView
from tests.tui.demo_fixture import demo_snapshot
from tests.tui.fake_source import FakeSource

from .helpers import (
    BASE,
    SIZE,
    crumbs,
    cursor_label,
    demo_app,
    header,
    snapshot_of,
    top_column,
    tree_labels,
    tree_line,
)


def diag_text(app: BpftopApp) -> str:
    body = app.query_one("#diag", DiagnosticsView).body
    lines = app.console.render_lines(body, app.console.options.update_width(120))
    return "\n".join("".join(seg.text for seg in line) for line in lines)


async def test_diagnostics_lists_unknown_maps_and_counters() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("5")
        assert app.views.view_id == "diag"
        text = diag_text(app)
        assert "no symbols in file (libcodec.so.1)" in text and "5.4%" in text
        assert "libcodec.so.1 has no symbols and no debug file was found" in text
        assert "rebuild it without stripping" in text
        assert "ustacks0" in text and "9,870 / 10,240" in text and "96%" in text
        assert "stack_trace" in text and "1016" in text
        assert "failed stack reads: user EFAULT" in text
        assert "lost perf-buffer events" in text and "dropped samples" in text
        assert "nearly full: unwind_rows, ustacks0, ustacks1" in text
        assert "events" not in text.split("nearly full")[1].split("\n")[0]
        for name in ("counts1", "wstacks_1", "calls", "blocked", "unwind_procs", "unwind_progs"):
            assert f"{name} " in text, f"every map is listed: {name}"
        assert "241,310 / 262,144" in text and "92%" in text, "the walker's rows fill up"
        verdict = " ".join(text.split("Collection")[0].split())
        assert "1 unwind table(s) did not fit" in verdict and "1 file(s) without CFI" in verdict
        assert "tables that did not fit" in text and "mappings dropped" in text
        assert "processes with tables" in text and "processes waiting for tables" in text
        assert "samples by frame pointers: tables not built yet" in text and "412" in text
        assert "bpftop CPU 1.8%" in text


async def test_diagnostics_page_scrolls_and_follows_new_snapshots() -> None:
    app, source = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("5")
        view = app.query_one("#diag", DiagnosticsView)
        height = view.scrollable_content_region.height
        lines = view.virtual_size.height
        assert lines > height and str(view.border_subtitle) == f"lines 1-{height} of {lines}"
        assert "stacks unreadable" in view.render_line(0).text
        await pilot.press("pagedown")
        assert round(view.scroll_y) == min(height - 1, lines - height), "a page, or to the end"
        await pilot.press("end")
        assert str(view.border_subtitle) == f"lines {lines - height + 1}-{lines} of {lines}"
        assert "bpftop CPU 1.8%" in "".join(view.render_line(y).text for y in range(height))
        await pilot.press("home")
        assert "stacks unreadable" in view.render_line(0).text
        first = demo_snapshot()
        source.push(replace(first, seq=2, stats=replace(first.stats, total_samples=123_456)))
        await pilot.pause()
        assert "123,456" in "".join(view.render_line(y).text for y in range(height))


async def test_diagnostics_says_trustworthy_when_nothing_lost() -> None:
    app = BpftopApp(FakeSource([snapshot_of(BASE)]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("5")
        assert "can be trusted" in diag_text(app)
        assert "(not loaded yet)" in diag_text(app)


async def test_diagnostics_shows_the_python_walker_when_python_ran() -> None:
    """A walk cut at 128 frames or stopped by a read is in the verdict; what --gil
    skipped is only listed (the user asked for it)."""
    counts = PythonCounts(walked=900, truncated=12, no_frame=30, read_errors=3, no_gil=70)
    snap = snapshot_of(BASE)
    app = BpftopApp(FakeSource([replace(snap, python=counts)]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("5")
        text = diag_text(app)
        verdict = " ".join(text.split("Collection")[0].split())
        assert "12 Python stacks cut at 128 frames" in verdict
        assert "3 Python walks stopped at an unreadable frame" in verdict
        assert "GIL" not in verdict and "not taken: the thread did not hold the GIL" in text
        assert "with Python frames" in text and "900" in text
    app = BpftopApp(FakeSource([replace(snap, python=PythonCounts())]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("5")
        assert "Python frames" not in diag_text(app), "no Python process: no table"


async def test_L_toggles_file_line_in_tree_and_top() -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e")
        assert "hash.c:31" not in tree_line(app, 7)
        await pilot.press("L")
        assert "mix_round  hash.c:31" in tree_line(app, 7)
        assert "file:line" in crumbs(app)
        await pilot.press("1")
        assert "mix_round  hash.c:31" in top_column(app, 3)
        await pilot.press("L")
        assert "mix_round" in top_column(app, 3)
        await pilot.press("2")
        assert "hash.c" not in tree_line(app, 7)
    assert source.source_lines == [True, False], "the collector is asked for lines only while shown"


async def test_top_sorts_by_any_column() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1")
        table = app.views.top_view
        assert top_column(app, 3)[0] == "mix_round" and table.sort_column == "self"
        await pilot.press("s")  # total
        assert table.sort_column == "total" and top_column(app, 1)[0].strip() == "100.0"
        await pilot.press("s", "s")  # function, ascending
        names = top_column(app, 3)
        assert names == sorted(names, key=str.lower)
        await pilot.press("S")
        assert top_column(app, 3) == sorted(names, key=str.lower, reverse=True)
        await pilot.press("s", "s")  # module, then back to self
        assert table.sort_column == "self"
        await pilot.click("#top", offset=(4, 0))  # header click: self % column
        assert table.sort_column == "self"


async def test_top_trend_markers_compare_with_last_tick() -> None:
    source = FakeSource([snapshot_of(BASE)])
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1")
        assert set(top_column(app, 5)) == {""}, "no trend marker yet"
        source.push(snapshot_of([*BASE, (["main", "work", "leaf_b"], 20), (["new"], 1)], seq=2))
        await pilot.pause()
        marks = dict(zip(top_column(app, 3), top_column(app, 5), strict=True))
        assert marks["leaf_b"] == "▲" and marks["leaf_a"] == "▼" and marks["new"] == "+"


async def test_top_trend_markers_hold_still_while_shares_only_jitter() -> None:
    """Cumulative counts: each tick moves every share a little, up or down (the
    arrows flipped on most rows every tick); a real change still shows."""
    stacks = [(["main", "a"], 600), (["main", "b"], 300), (["main", "c"], 100)]
    source = FakeSource([snapshot_of(stacks)])
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1")
        for seq, (a, b, c) in enumerate([(63, 27, 10), (57, 33, 10), (62, 29, 9), (59, 31, 10)]):
            stacks = [(stacks[0][0], stacks[0][1] + a), (stacks[1][0], stacks[1][1] + b),
                      (stacks[2][0], stacks[2][1] + c)]  # fmt: skip
            source.push(snapshot_of(stacks, seq=seq + 2))
            await pilot.pause()
            assert set(top_column(app, 5)) == {""}, f"tick {seq + 2}: {top_column(app, 5)}"
        for seq in range(6, 12):  # c now takes every new sample: hotter over the window
            stacks = [*stacks[:2], (stacks[2][0], stacks[2][1] + 100)]
            source.push(snapshot_of(stacks, seq=seq))
            await pilot.pause()
        marks = dict(zip(top_column(app, 3), top_column(app, 5), strict=True))
        assert marks == {"c": "▲", "a": "▼", "b": "▼", "main": ""}, marks


async def test_enter_zooms_tree_and_backspace_esc_zoom_out() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e", "up")  # e ends on mix_round: its own time outweighs its callee
        assert cursor_label(app) == "hash_payload"
        await pilot.press("enter")
        assert tree_labels(app)[:2] == ["hash_payload", "mix_round"]
        assert "handle_request › hash_payload" in crumbs(app)
        await pilot.press("down", "enter")
        assert tree_labels(app)[0] == "mix_round" and len(app.state.zoom) == 2
        await pilot.press("backspace")
        assert tree_labels(app)[0] == "hash_payload"
        await pilot.press("escape")
        assert tree_labels(app)[0] == "demo" and "zoom" not in crumbs(app)
        await pilot.press("escape")  # nothing left to zoom out of: harmless
        assert app.is_running


async def test_flame_navigation_and_shared_zoom() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e", "4")  # mix_round selected in the tree
        flame = app.views.flame_view
        assert flame.selected_key() == ("mix_round", "/opt/demo/bin/demo", False)
        await pilot.press("up")
        assert flame.selected[-1][0] == "hash_payload"
        await pilot.press("right")
        assert flame.selected[-1][0] == "parse_headers"
        await pilot.press("left", "down")
        assert flame.selected[-1][0] == "mix_round"
        await pilot.press("k", "enter")
        assert flame.rows[0][0].node.label == "hash_payload"
        await pilot.press("2")  # the tree shares the zoom
        assert tree_labels(app)[0] == "hash_payload"
        await pilot.press("4", "home", "backspace")
        assert flame.rows[0][0].node.label == "all"
        assert "all" in flame.render_line(0).text


async def test_flame_pgup_pgdn_home_end_move_by_levels() -> None:
    app, _ = demo_app()
    async with app.run_test(size=(120, 12)) as pilot:
        await pilot.pause()
        await pilot.press("4", "end")  # down the widest callees, as deep as they go
        flame = app.views.flame_view
        labels = [key[0] for key in flame.selected]
        assert labels[-4:] == ["handle_request", "hash_payload", "mix_round", "rotate_left"]
        shown = f"-{len(labels) + 1} of {len(flame.rows)}"  # the root's row, then one per level
        assert str(flame.border_subtitle).endswith(shown), "scrolled to the selected box"
        page = flame.content_size.height - 1
        assert 0 < page < len(labels) - 1
        await pilot.press("pageup")
        assert [key[0] for key in flame.selected] == labels[:-page]
        await pilot.press("pagedown")
        assert [key[0] for key in flame.selected] == labels
        await pilot.press("home")
        assert flame.selected == () and flame.render_line(0).text.startswith("all")
        await pilot.press("pageup")  # at the root: nowhere to go
        assert flame.selected == ()


async def test_flame_keeps_the_layouts_of_one_tree_only() -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("4")
        flame = app.views.flame_view
        whole = flame.rows
        await pilot.press("down", "down", "enter")
        zoomed = flame.rows
        assert zoomed[0][0].node.label != "all"
        await pilot.press("backspace")
        assert flame.rows is whole, "zooming back out: the same layout, not made again"
        await pilot.press("enter")
        assert flame.rows is zoomed
        await pilot.press("2", "4")
        assert flame.rows is zoomed, "a view switch without a new tick keeps the layout"
        source.push(replace(demo_snapshot(), seq=2))  # the same profile, a new tree
        await pilot.pause()
        assert flame.rows is not zoomed and flame.rows[0][0].node.label == zoomed[0][0].node.label


async def test_callers_view_follows_selection_and_enter_picks_a_caller() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("3")  # the tree opened on the hot path's end, mix_round: its callers
        callers = app.views.callers_view
        labels = [row.node.label for row in callers.rows]
        assert labels[:3] == ["mix_round", "hash_payload", "handle_request"]
        assert "log_stats" in labels
        assert "100.0%" in callers.render_line(0).text
        assert callers.cursor == 0
        await pilot.press("down", "enter")  # now the callers of hash_payload
        assert next(row.node.label for row in callers.rows) == "hash_payload"
        await pilot.press("1")  # the Top view follows the function picked there
        assert app.views.top_view.selected_key() == ("hash_payload", "/opt/demo/bin/demo", False)


async def test_callers_self_column_is_the_functions_own_share_and_e_opens_to_a_process() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("3")
        callers = app.views.callers_view
        fn = callers.rows[0].node
        (own,) = [f for f in demo_snapshot().hot if f.label == fn.label]
        assert own.self_count > 0 and fn.self_count == own.self_count
        share = 100 * own.self_count / fn.total_count
        assert callers.render_line(0).text.split()[:2] == ["100.0%", f"{share:.1f}%"]
        await pilot.press("e")  # own samples on every row: the chain still opens to a process
        end = callers.rows[callers.cursor]
        assert end.node.label == "demo" and not end.node.has_children


async def test_selection_follows_from_top_to_tree() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1", "j")  # strchr (mix_round has rotate_left's samples)
        await pilot.press("2")
        assert cursor_label(app) == "strchr"
        assert "parse_headers" in tree_labels(app)


async def test_threads_view_enter_shows_one_thread_and_a_all() -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("6")
        table = app.query_one("#threads", ThreadsView)
        assert table.row_count == 2 and table.threads[1].name == "compressor"
        assert "compressor" in table.row_line(1, 80).plain
        assert "demo" in table.row_line(0, 80).plain and "97.1%" in table.row_line(0, 80).plain
        assert table.scrollbars_enabled == (False, False), "no scrollbars, as docs/views.md says"
        await pilot.press("j", "enter")
        assert source.threads == [4243] and app.thread == 4243
        assert "thread 4243" in header(app) and "switching" in header(app)
        source.push(replace(demo_snapshot(2), time_mode="cumulative, thread 4243"))
        await pilot.pause()
        assert "switching" not in header(app)
        assert table.shown_tid == 4243 and table.threads[1].tid == 4243
        await pilot.press("a")
        assert source.threads == [4243, None] and app.thread is None
        await pilot.press("a")  # already all threads: nothing asked
        assert source.threads == [4243, None]
        await pilot.press("enter", "enter")  # choosing the shown thread again: all threads
        assert source.threads == [4243, None, 4243, None]


async def test_inlined_frames_are_marked_in_the_tree() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e", "right")  # the hot path ends on mix_round; its inline callee
        lines = [tree_line(app, y) for y in range(len(app.views.tree_view.rows))]
        inlined = [line for line in lines if "rotate_left" in line]
        assert inlined and "rotate_left (inlined)" in inlined[0]
        assert not any("(inlined)" in line for line in lines if "rotate_left" not in line)


async def test_top_counts_inline_frames_in_their_function_and_i_shows_them_as_rows() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1")
        rows = {fn.label: fn.self_count for fn in app.views.top_view.ordered}
        assert "rotate_left" not in rows, "inlined into mix_round: its samples are mix_round's"
        assert rows["mix_round"] == 4210 + 1175 + 180
        assert app.views.top_view.ordered[0].label == "mix_round"
        await pilot.press("i")
        rows = {fn.label: fn.self_count for fn in app.views.top_view.ordered}
        assert rows["rotate_left"] == 1175 and rows["mix_round"] == 4210 + 180
        assert "inline rows" in crumbs(app)
        await pilot.press("2", "right")  # the tree keeps the inline frame, marked, either way
        assert any("rotate_left (inlined)" in tree_line(app, y) for y in range(40))
        await pilot.press("i", "1")
        assert "rotate_left" not in {fn.label for fn in app.views.top_view.ordered}


async def test_flame_title_shows_the_selected_frames_share() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("4")  # mix_round, the tree's selection
        flame = app.views.flame_view
        total = demo_snapshot().tree.total_count
        mix = 100 * (4210 + 1175 + 180) / total  # every mix_round box: the hottest is one
        title = str(flame.border_title)
        assert title.startswith("Flame graph") and "mix_round: " in title
        share = float(title.split("mix_round: ")[1].split("%")[0])
        assert 0 < share < mix
        await pilot.press("up")
        assert "hash_payload: " in str(flame.border_title)
        await pilot.press("home")  # the root: nothing to say
        assert str(flame.border_title) == "Flame graph (icicle): ← → ↑ ↓ move, Enter zoom"


def test_every_view_takes_the_same_shown() -> None:
    """One view protocol (tui/views/shown.py): mypy checks each view class
    against ``View`` here, and these are all the switcher's views."""
    from bpftop.tui.views.callers import CallersView
    from bpftop.tui.views.calltree import CallTreeView
    from bpftop.tui.views.diagnostics import DiagnosticsView
    from bpftop.tui.views.flame import FlameView
    from bpftop.tui.views.navigation import VIEWS
    from bpftop.tui.views.shown import View
    from bpftop.tui.views.threads import ThreadsView
    from bpftop.tui.views.top import TopView

    views: list[type[View]] = [
        TopView, CallTreeView, CallersView, FlameView, DiagnosticsView, ThreadsView
    ]  # fmt: skip
    assert len(views) == len(VIEWS)
    for view in views:
        assert "show" in vars(view), f"{view.__name__} draws from Shown itself"
