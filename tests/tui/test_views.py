"""Pilot tests of the views and their keys: top, tree zoom, callers, flame, diagnostics,
search / filter, the file:line toggle, and export of a zoomed or filtered profile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.app.help import HelpScreen
from bpftop.tui.views.diagnostics import DiagnosticsView
from bpftop.tui.views.threads import ThreadsView
from tests.tui.demo_fixture import demo_snapshot
from tests.tui.fake_source import FakeSource

from .helpers import (
    BASE,
    WorkerJobs,
    crumbs,
    header,
    notifications,
    snapshot_of,
    top_column,
    tree_labels,
    tree_line,
)

SIZE = (120, 36)


def demo_app(tmp_path: Path | None = None) -> tuple[BpftopApp, FakeSource]:
    source = FakeSource([demo_snapshot()])
    return BpftopApp(source, 1.0, export_dir=tmp_path), source


def cursor_label(app: BpftopApp) -> str:
    return tree_labels(app)[app.views.tree_view.cursor]


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
        assert "no symbols (stripped, no debuglink)" in text and "5.4%" in text
        assert "install the -dbg package of libz" in text
        assert "stack_traces" in text and "9,870 / 10,240" in text and "96%" in text
        assert "stack_trace" in text and "1016" in text
        assert "failed stack reads: user EFAULT" in text
        assert "lost perf-buffer events" in text and "dropped samples" in text
        assert "nearly full: stack_traces" in text
        assert "events" not in text.split("nearly full")[1].split("\n")[0]
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


async def test_enter_zooms_tree_and_backspace_esc_zoom_out() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e", "up", "up")
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
        await pilot.press("e", "up", "4")  # mix_round selected in the tree
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
        await pilot.press("3")
        assert "select a function" in app.views.callers_view.render_line(0).text
        await pilot.press("2", "e", "up", "3")  # mix_round
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


async def test_selection_follows_from_top_to_tree() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1", "j", "j")  # strchr
        await pilot.press("2")
        assert cursor_label(app) == "strchr"
        assert "parse_headers" in tree_labels(app)


async def test_search_highlights_and_n_N_jump_in_every_view() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        assert app.search_input.has_focus
        await pilot.press(*"write", "enter")
        assert "/write/" in crumbs(app) and app.views.tree_view.has_focus
        assert cursor_label(app) == "write"  # jumped to the first match
        await pilot.press("n")
        assert cursor_label(app) == "ksys_write"
        await pilot.press("n", "n")
        assert cursor_label(app) == "write"  # wrapped
        await pilot.press("N")
        assert cursor_label(app) == "vfs_write"
        await pilot.press("1", "n")
        assert app.views.top_view.selected_key() is not None
        assert "write" in str(app.views.top_view.selected_key())
        await pilot.press("4", "n")
        assert "write" in app.views.flame_view.selected[-1][0]
        await pilot.press("N")
        assert "write" in app.views.flame_view.selected[-1][0]


async def test_bad_regex_and_missing_search_say_so() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("n")
        assert "press / first" in notifications(app)[-1].message
        await pilot.press("f")
        assert "filter needs a search" in notifications(app)[-1].message
        await pilot.press("slash", "left_parenthesis", "enter")
        assert "bad regex" in notifications(app)[-1].message
        assert app.search_input.has_class("open")
        await pilot.press("escape")
        assert not app.search_input.has_class("open") and app.state.pattern == ""
        await pilot.press("slash", *"zzz", "enter", "n")
        assert "no match" in notifications(app)[-1].message
        await pilot.press("escape")  # no zoom: esc clears the search
        assert app.state.pattern == "" and "/zzz/" not in crumbs(app)


async def test_filter_hides_other_stacks_and_w_writes_what_is_shown(tmp_path: Path) -> None:
    app, _ = demo_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"write", "enter", "f")
        assert app.state.filtering and "filter" in crumbs(app)
        labels = tree_labels(app)
        assert "hash_payload" not in labels and "send_response" in labels
        await pilot.press("1")
        assert "mix_round" not in top_column(app, 3)
        await pilot.press("w")
        (written,) = tmp_path.glob("*.folded")
        lines = written.read_text().splitlines()
        assert len(lines) == 1 and "tcp_sendmsg_[k] 694" in lines[0]
        assert "filtered" in notifications(app)[-1].message
        await pilot.press("f")
        assert not app.state.filtering
        await pilot.press("slash", "ctrl+u", "enter")  # empty search clears
        assert app.state.match is None


async def test_w_writes_the_zoomed_subtree(tmp_path: Path) -> None:
    app, _ = demo_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e", "up", "up", "enter", "w")
        (written,) = tmp_path.glob("*.folded")
        lines = written.read_text().splitlines()
        assert all(";handle_request;hash_payload" in line for line in lines)
        assert len(lines) == 4 and "zoomed" in notifications(app)[-1].message


async def test_help_lists_the_new_keys() -> None:
    app, _ = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        for key in ("Callers", "Flame", "Diagnostics", "zoom", "regex", "file:line", "sort"):
            assert key in text
        await pilot.press("3")  # ignored while help is up
        assert app.views.view_id == "tree"


async def test_b_freezes_a_baseline_and_shows_deltas_until_cleared() -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("b")
        await pilot.press("e")
        assert "baseline" in notifications(app)[-1].title
        assert "Δ vs baseline of 9,608" in crumbs(app)
        assert "   0.0    0.0" in tree_line(app, 6)
        source.push(demo_snapshot(2, later=True))
        await pilot.pause()
        parse = tree_labels(app).index("parse_headers")
        assert "+2.6  +16.2" in tree_line(app, parse)
        await pilot.press("1")
        row = top_column(app, 3).index("strchr")
        assert top_column(app, 6)[row].strip() == "+13.5"
        await pilot.press("b")
        assert app.state.baseline is None and app.views.top_view.baseline is None
        assert len(app.views.top_view.column_spans()) == 6, "no Δ columns"
        await pilot.press("2")
        assert "+2.6" not in tree_line(app, parse)


async def test_b_before_any_snapshot_warns() -> None:
    app = BpftopApp(FakeSource(), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("b")
        assert notifications(app)[-1].severity == "warning"
        assert app.state.baseline is None


async def test_r_asks_the_source_to_reset() -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        assert source.resets == 1 and not app.rates
        assert notifications(app)[-1].title == "reset"
        source.push(snapshot_of(BASE, seq=2))  # what the source sends next
        await pilot.pause()
        assert tree_labels(app)[0] == "small"


async def test_m_cycles_time_modes_and_the_header_shows_it() -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "⏱ cumulative" in header(app)
        await pilot.press("m")
        assert source.modes[-1].label == "last 30s" and "⏱ last 30s" in header(app)
        assert "switching" in header(app)  # until a snapshot built that way arrives
        source.push(replace(demo_snapshot(2), time_mode="last 30s"))
        await pilot.pause()
        assert "switching" not in header(app)
        await pilot.press("m", "m")
        assert [m.mode.value for m in source.modes] == ["window", "decay", "cumulative"]


async def test_reset_and_modes_need_a_controlled_source() -> None:
    class PlainSource:
        def start(self, on_snapshot: object, on_error: object) -> None:
            pass

        def stop(self) -> None:
            pass

    app = BpftopApp(PlainSource(), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        assert "cannot reset" in notifications(app)[-1].message
        await pilot.press("m")
        assert "one time mode" in notifications(app)[-1].message
        app.select_thread(7)
        await pilot.pause()
        assert "cannot show one thread" in notifications(app)[-1].message


async def test_K_and_U_hide_kernel_or_user_frames() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1", "K")
        assert "tcp_sendmsg" not in top_column(app, 3) and "write" in top_column(app, 3)
        assert "user frames only" in crumbs(app)
        await pilot.press("U")
        assert set(top_column(app, 4)) == {"[kernel]"}
        assert "kernel frames only" in crumbs(app)
        await pilot.press("U")
        assert "mix_round" in top_column(app, 3) and "only" not in crumbs(app)


async def test_slow_callers_build_runs_in_a_worker_and_shows_when_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e", "up", "3")
        callers = app.views.callers_view
        first = [row.node.label for row in callers.rows]
        callers.builds.sync_wait_s = 0  # as if every build were slow: never wait for one
        jobs = WorkerJobs(callers.builds, monkeypatch)
        source.push(demo_snapshot(2, later=True))
        for _ in range(100):
            await pilot.pause(0.01)
            if jobs.count and not callers.builds.busy:
                break
        assert jobs.count == 1  # the build went to a worker thread
        assert not callers.builds.busy
        assert [row.node.label for row in callers.rows] == first
        assert callers.call_tree.total_count == 4_210 + 1_175 + 180 + 300


async def test_threads_view_enter_shows_one_thread_and_a_all() -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("6")
        table = app.query_one("#threads", ThreadsView)
        assert table.row_count == 3 and str(table.get_row_at(0)[1]) == "demo-worker-1"
        assert str(table.get_row_at(0)[3]).strip() == "53.2%"
        await pilot.press("j", "enter")
        assert source.threads == [4244] and app.thread == 4244
        assert "thread 4244" in header(app) and "switching" in header(app)
        source.push(replace(demo_snapshot(2), time_mode="cumulative, thread 4244"))
        await pilot.pause()
        assert "switching" not in header(app)
        assert "bold reverse" in str(table.get_row_at(1)[0].style)
        await pilot.press("a")
        assert source.threads == [4244, None] and app.thread is None
        await pilot.press("a")  # already all threads: nothing asked
        assert source.threads == [4244, None]
        await pilot.press("enter", "enter")  # choosing the shown thread again: all threads
        assert source.threads == [4244, None, 4244, None]


async def test_inlined_frames_are_marked_in_the_tree() -> None:
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e")  # the hot path runs through mix_round -> rotate_left
        lines = [tree_line(app, y) for y in range(len(app.views.tree_view.rows))]
        inlined = [line for line in lines if "rotate_left" in line]
        assert inlined and "rotate_left (inlined)" in inlined[0]
        assert not any("(inlined)" in line for line in lines if "rotate_left" not in line)


async def test_slow_filter_is_derived_in_a_worker_and_shown_when_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.deriving.sync_wait_s = 0  # as if every derive were slow: never wait for one
        jobs = WorkerJobs(app.deriving, monkeypatch)
        await pilot.press("slash", *"write", "enter", "f")
        for _ in range(100):
            await pilot.pause(0.01)
            if not app.deriving.busy and "hash_payload" not in tree_labels(app):
                break
        assert jobs.count >= 1, "the filtered tree was made on the worker"
        labels = tree_labels(app)
        assert "hash_payload" not in labels and "send_response" in labels
        source.push(demo_snapshot(2, later=True))  # a new tick: derived again, off the app thread
        for _ in range(100):
            await pilot.pause(0.01)
            assert app.shown is not None
            if not app.deriving.busy and app.last_derived is app.state.cached(app.shown.tree):
                break
        assert app.shown is not None and app.shown.seq == 2
        assert app.state.cached(app.shown.tree) is app.last_derived is not None
        assert "hash_payload" not in tree_labels(app) and "send_response" in tree_labels(app)
        await pilot.press("f")  # plain again: no worker needed
        assert "hash_payload" in tree_labels(app)
