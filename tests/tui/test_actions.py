"""Pilot tests of the app-wide actions on the demo fixture: search and filter,
``w`` (export what is shown), help, baseline, reset, time modes, user/kernel
frames, and the jobs that run off the app thread."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.app.help import HelpScreen
from tests.tui.demo_fixture import demo_snapshot
from tests.tui.fake_source import FakeSource

from .helpers import (
    BASE,
    SIZE,
    WorkerJobs,
    crumbs,
    cursor_label,
    demo_app,
    header,
    notifications,
    snapshot_of,
    top_column,
    tree_labels,
    tree_line,
)


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
        assert app.state.filtering and "filter % of matching stacks" in crumbs(app)
        labels = tree_labels(app)
        assert "hash_payload" not in labels and "send_response" in labels
        assert tree_line(app, 0).lstrip().startswith("100.0%"), "% of the matching stacks"
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
        await pilot.press("e", "up", "enter", "w")  # e ends on mix_round (own time)
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
        await pilot.press("e", "3")  # e ends on mix_round
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


class NativeSource(FakeSource):
    """A fake source that can show native frames (as the collector can)."""

    def __init__(self) -> None:
        super().__init__([snapshot_of(BASE)])
        self.native: list[bool] = []

    def show_native_frames(self, on: bool) -> None:
        self.native.append(on)


async def test_p_cycles_python_only_native_only_and_merged() -> None:
    """P: Python frames only (a view filter), then native frames only (asked
    of a source that can; the header says so), then the merged stacks; a source
    that cannot show native frames goes from Python only back to all."""
    source = NativeSource()
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("P")
        assert app.state.frames == "python" and source.native == []
        await pilot.press("P")
        await pilot.pause()
        assert app.state.frames == "all" and source.native == [True]
        assert "native frames" in header(app)
        await pilot.press("P")
        await pilot.pause()
        assert app.state.frames == "all" and source.native == [True, False]
        assert "native frames" not in header(app)
    plain = BpftopApp(FakeSource([snapshot_of(BASE)]), 1.0)
    async with plain.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("P", "P")
        assert plain.state.frames == "all" and not plain.native
