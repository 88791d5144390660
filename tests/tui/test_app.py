"""Pilot tests of every key binding and every source event, against FakeSource."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from textual.widgets._toast import Toast, ToastRack

from bpftop.base.errors import BpftopError, PermissionsError
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.app.help import HelpScreen
from bpftop.tui.model.snapshot import Phase
from tests.formats.folded_oracle import folded_lines
from tests.tui.fake_source import FakeSource

from .helpers import (
    BASE,
    crumbs,
    cursor_label,
    header,
    notifications,
    snapshot_of,
    top_row,
    tree_labels,
    tree_line,
)

SIZE = (100, 30)


def make_app(tmp_path: Path | None = None, **kwargs: object) -> tuple[BpftopApp, FakeSource]:
    source = FakeSource([snapshot_of(BASE)])
    app = BpftopApp(source, 1.0, export_dir=tmp_path, **kwargs)  # type: ignore[arg-type]
    return app, source


async def test_first_snapshot_is_shown_and_source_started() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert source.started
        assert "small" in header(app) and "pid 99" in header(app)
        assert "10 samples" in header(app)
        # the tree opens on the hottest path, the cursor on its leaf
        assert tree_labels(app) == ["small", "main", "work", "leaf_a", "leaf_b", "idle"]
        assert cursor_label(app) == "leaf_a"
        assert "100.0%" in tree_line(app, 0)
        assert app.views.tree_view.has_focus and app.views.view_id == "tree"
        await pilot.press("1")
        table = app.views.top_view
        assert table.row_count == 5 and table.has_focus
        assert top_row(app, 0)[3] == "leaf_a"


async def test_q_quits_and_stops_source() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert source.stop_calls == 1
    assert app.error is None
    assert app.return_code == 0


async def test_ctrl_c_quits_and_stops_source() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert source.stop_calls == 1
    assert app.return_code == 0


async def test_space_pauses_display_while_snapshots_arrive() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("space")
        assert app.paused and "PAUSED" in header(app)
        before_rows = tree_labels(app)
        before_line = tree_line(app, 0)
        newer = [*BASE, (["other"], 30)]
        source.push(snapshot_of(newer, seq=2))
        source.push(snapshot_of([*newer, (["third"], 5)], seq=3))
        await pilot.pause()
        assert app.latest is not None and app.latest.seq == 3
        assert app.shown is not None and app.shown.seq == 1
        assert tree_labels(app) == before_rows
        assert tree_line(app, 0) == before_line
        assert "10 samples" in header(app)
        assert len(app.views.top_view.functions) == 5
        await pilot.press("space")
        assert not app.paused and "PAUSED" not in header(app)
        assert app.shown is not None and app.shown.seq == 3
        assert "45 samples" in header(app)
        assert len(app.views.top_view.functions) == 7


async def test_tab_and_number_keys_switch_views() -> None:
    app, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.views.view_id == "tree" and app.views.tree_view.has_focus
        order = ["callers", "flame", "diag", "threads", "top", "tree"]
        for expected in order:
            await pilot.press("tab")
            assert app.views.view_id == expected
            assert app.focused is app.query_one(f"#{expected}")
        await pilot.press("shift+tab")
        assert app.views.view_id == "top" and app.views.top_view.has_focus
        views = ["top", "tree", "callers", "flame", "diag", "threads"]
        for key, expected in zip("123456", views, strict=True):
            await pilot.press(key)
            assert app.views.view_id == expected
        assert " 6 Threads " in crumbs(app)


async def test_expand_collapse_keys_change_visible_rows() -> None:
    app, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        full = ["small", "main", "work", "leaf_a", "leaf_b", "idle"]
        await pilot.press("home")  # the user takes over: the hot path stays open
        assert tree.cursor == 0 and tree_labels(app) == full
        await pilot.press("down")  # main
        assert tree.cursor == 1
        await pilot.press("j", "left")  # work, collapse
        assert tree_labels(app) == ["small", "main", "work", "idle"]
        await pilot.press("l")  # expand work
        assert tree_labels(app) == full
        await pilot.press("left")  # collapse work
        assert tree_labels(app) == ["small", "main", "work", "idle"]
        await pilot.press("h")  # work is collapsed: go to parent
        assert tree.cursor == 1 and tree_labels(app)[tree.cursor] == "main"
        await pilot.press("h")  # collapse main
        assert tree_labels(app) == ["small", "main"]
        await pilot.press("plus")
        assert tree_labels(app) == ["small", "main", "work", "idle"]
        await pilot.press("plus")
        assert tree_labels(app) == ["small", "main"]
        await pilot.press("k")
        assert tree.cursor == 0
        await pilot.press("plus")  # collapse the process row
        assert tree_labels(app) == ["small"]
        assert "▶ small" in tree_line(app, 0)


async def test_tree_follows_the_hot_path_until_the_user_takes_over() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        assert cursor_label(app) == "leaf_a"
        hotter_idle = [*BASE, (["main", "idle", "poll"], 20)]
        source.push(snapshot_of(hotter_idle, seq=2))
        await pilot.pause()
        # the new hottest path is opened, and the selection stays where it was (shown)
        assert tree_labels(app) == ["small", "main", "idle", "poll", "work", "leaf_a", "leaf_b"]
        assert cursor_label(app) == "leaf_a"
        source.push(snapshot_of(BASE, seq=3))
        await pilot.pause()  # the old hottest path again; what only the hot path opened closes
        assert tree_labels(app) == ["small", "main", "work", "leaf_a", "leaf_b", "idle"]
        await pilot.press("up")  # work: the user moved, the tree stops following
        source.push(snapshot_of(hotter_idle, seq=4))
        await pilot.pause()
        assert cursor_label(app) == "work" and tree.following_hot is False
        assert tree_labels(app) == ["small", "main", "idle", "work", "leaf_a", "leaf_b"]


async def test_expanding_anything_stops_following_the_hot_path() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("h")  # leaf_a has no children: to its parent (a cursor move)
        assert cursor_label(app) == "work"
        app.views.tree_view.following_hot = True
        await pilot.press("h")  # collapse work
        source.push(snapshot_of([*BASE, (["main", "idle", "poll"], 20)], seq=2))
        await pilot.pause()
        assert cursor_label(app) == "work" and "poll" not in tree_labels(app)


async def test_cursor_movement_keys() -> None:
    app, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        await pilot.press("e")  # expand hot path: small main work leaf_a
        assert tree_labels(app)[tree.cursor] == "leaf_a"
        await pilot.press("home")
        assert tree.cursor == 0
        await pilot.press("end")
        assert tree.cursor == len(tree.rows) - 1
        await pilot.press("up")
        assert tree.cursor == len(tree.rows) - 2
        await pilot.press("pageup")
        assert tree.cursor == 0
        await pilot.press("pagedown")
        assert tree.cursor == len(tree.rows) - 1
        await pilot.press("k", "k", "j")
        assert tree.cursor == len(tree.rows) - 2


async def test_e_expands_the_hot_path_and_selects_its_leaf() -> None:
    app, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e")
        assert tree_labels(app) == ["small", "main", "work", "leaf_a", "leaf_b", "idle"]
        assert app.views.tree_view.cursor == 3
        assert "▼ work" in tree_line(app, 2)


async def test_selection_and_expansion_survive_new_snapshots() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e", "down")  # leaf_b
        tree = app.views.tree_view
        path = tree.cursor_path
        assert tree_labels(app)[tree.cursor] == "leaf_b"
        # a new hot sibling sorts above leaf_b's parent's siblings
        source.push(snapshot_of([*BASE, (["main", "work", "new_hot"], 50)], seq=2))
        await pilot.pause()
        assert tree_labels(app) == ["small", "main", "work", "new_hot", "leaf_a", "leaf_b", "idle"]
        assert tree.cursor_path == path
        assert tree_labels(app)[tree.cursor] == "leaf_b"
        # if the node disappears, the selection falls back to its nearest ancestor
        source.push(snapshot_of([(["main", "work", "leaf_a"], 1)], seq=3))
        await pilot.pause()
        assert tree_labels(app)[tree.cursor] == "work"


async def test_top_view_keys_and_selection_survive_ticks() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1", "j")
        table = app.views.top_view
        assert table.cursor == 1
        assert top_row(app, 1)[3] == "leaf_b"
        source.push(snapshot_of([*BASE, (["main", "hotter"], 50)], seq=2))
        await pilot.pause()
        assert top_row(app, table.cursor)[3] == "leaf_b"
        await pilot.press("k")
        assert top_row(app, table.cursor)[3] == "leaf_a"
        assert "self %▼" in table.header_line(0, 120).plain, "sorted by self, descending"


async def test_w_writes_the_shown_tree_as_folded(tmp_path: Path) -> None:
    app, source = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("space")  # paused: the written file is what is shown
        source.push(snapshot_of([(["other"], 99)], seq=2))
        await pilot.pause()
        await pilot.press("w")
        files = list(tmp_path.glob("bpftop-*.folded"))
        assert len(files) == 1
        assert app.shown is not None
        expected = sorted(folded_lines(app.shown.tree))
        assert sorted(files[0].read_text().splitlines()) == expected
        assert "small;main;work;leaf_a 6" in expected
        note = notifications(app)[-1]
        assert str(files[0]) in note.message and note.severity == "information"


async def test_w_to_explicit_path(tmp_path: Path) -> None:
    target = tmp_path / "mine.folded"
    app, _ = make_app(export_path=target)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("w")
        assert target.read_text().startswith("small;")


async def test_w_says_the_absolute_path_of_a_relative_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app, _ = make_app(Path("."))  # the default: the directory bpftop was started in
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("w")
        await pilot.pause()
        (written,) = tmp_path.glob("bpftop-*.folded")
        message = notifications(app)[-1].message
        assert message.endswith(f" to {written}") and str(tmp_path) in message


async def test_w_to_unwritable_dir_notifies_and_keeps_running(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    app, _ = make_app(blocker)  # a file, not a directory: unwritable even for root
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        rows = tree_labels(app)
        await pilot.press("w")
        await pilot.pause()
        note = notifications(app)[-1]
        assert note.severity == "error"
        assert "cannot write" in note.message and str(blocker) in note.message
        assert app.is_running and app.error is None
        assert tree_labels(app) == rows and app.shown is not None
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def shown_toasts(app: BpftopApp) -> list[str]:
    """The notifications drawn on the current screen."""
    rack = app.screen.query_one(ToastRack)
    return [str(toast.render()) for toast in rack.query(Toast)] if rack.display else []


async def test_toasts_are_not_drawn_over_help() -> None:
    app, _ = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        app.notify("written to /tmp/x.folded", timeout=30)
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert shown_toasts(app) == []
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        assert any("/tmp/x.folded" in text for text in shown_toasts(app)), "shown after help"


async def test_question_mark_shows_help_and_it_closes() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        for key in ("space", "Tab", "Enter", "quit", "folded"):
            assert key in text
        await pilot.press("tab")  # ignored while help is up
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        await pilot.press("q")  # closes help, does not quit
        assert not isinstance(app.screen, HelpScreen)
        assert app.is_running and source.stop_calls == 0


async def test_source_error_exits_with_error_stored() -> None:
    app, source = make_app()
    error = PermissionsError("not allowed to load BPF programs", "run as root")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        source.fail(error)
        await pilot.pause()
    assert app.error is error
    assert app.return_code == 77
    assert source.stop_calls == 1


async def test_start_failure_exits_with_error() -> None:
    class FailingSource(FakeSource):
        def start(self, on_snapshot, on_error):
            raise BpftopError("boom", "hint")

    source = FailingSource()
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
    assert app.error is not None and app.error.message == "boom"
    assert source.stop_calls == 1


async def test_compiling_phase_is_shown_at_once() -> None:
    source = FakeSource([snapshot_of([], phase=Phase.COMPILING, process=None)])
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "compiling BPF program" in header(app)
        assert "compiling BPF program" in tree_line(app, 0)
        source.push(snapshot_of(BASE, seq=2))
        await pilot.pause()
        assert "compiling" not in header(app) and "sampling" in header(app)


async def test_before_any_snapshot_says_starting() -> None:
    app = BpftopApp(FakeSource(), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "starting" in header(app)
        assert "starting" in tree_line(app, 0)
        await pilot.press("w")
        assert notifications(app)[-1].severity == "warning"


async def test_exited_phase_keeps_everything_collected() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        rows = tree_labels(app)
        source.push(snapshot_of(BASE, seq=2, phase=Phase.EXITED))
        await pilot.pause()
        assert "process exited" in header(app)
        assert tree_labels(app) == rows
        assert len(app.views.top_view.functions) == 5


async def test_threaded_source_delivery_coalesces_to_latest() -> None:
    source = FakeSource(threaded=True)
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        for seq in range(1, 51):
            source.push(snapshot_of(BASE, seq=seq))
        source.drain()
        await pilot.pause()
        await pilot.pause()
        assert app.shown is not None and app.shown.seq == 50
    assert source.stop_calls == 1 and source.stopped


async def test_top_shows_time_for_time_probes() -> None:
    ns = [(["main", "wait_lock"], 2_500_000_000), (["main", "read_disk"], 40_000_000)]
    snap = dataclasses.replace(snapshot_of(ns), weight_unit="ns")
    app = BpftopApp(FakeSource([snap]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("1")
        table = app.views.top_view
        assert "time" in table.header_line(0, 120).plain
        assert [top_row(app, i)[2] for i in range(2)] == ["2.5 s", "40 ms"]
