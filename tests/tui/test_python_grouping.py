"""Python frames are grouped by function by default (py-spy top's), ``G`` shows
lines; regrouping or choosing a thread keeps the expanded hot path and the cursor."""

from __future__ import annotations

from bpftop.symbols.frame import Frame
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Phase, Snapshot, ThreadShare
from tests.tui.fake_source import FakeSource

from .helpers import PROCESS, crumbs, cursor_label, tree_labels

SIZE = (120, 36)
PY = "/srv/etl.py"


def py(name: str, line: int) -> Frame:
    return Frame(f"{name} ({PY}:{line})", PY, 0, file=PY, line=line)


def native(name: str) -> Frame:
    return Frame(name, "/usr/bin/python3.11", 0x10)


def python_snapshot(seq: int = 1, scale: int = 1, time_mode: str = "") -> Snapshot:
    start = (native("_start"), native("Py_RunMain"), py("<module>", 40), py("main", 31))
    profile = Profile()
    for frames, count in (
        ((*start, py("parse_records", 6)), 405),
        ((*start, py("parse_records", 5)), 160),
        ((*start, py("parse_records", 5), native("PyUnicode_Split")), 90),
        ((*start[:3], py("main", 33), py("write_out", 12)), 200),
        ((*start[:3], py("main", 35)), 20),
    ):
        profile.add("python3", frames, count * scale)
    stats = CollectionStats(probe="profile:hz:99", total_samples=profile.total_samples)
    threads = (ThreadShare(99, "MainThread", profile.total_samples),)
    return Snapshot(
        seq=seq, phase=Phase.SAMPLING, stats=stats, process=PROCESS, tree=profile.tree(),
        hot=profile.hot_functions(200), threads=threads, time_mode=time_mode,
    )  # fmt: skip


async def test_python_frames_are_grouped_by_function_and_g_shows_lines() -> None:
    app = BpftopApp(FakeSource([python_snapshot()]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        labels = tree_labels(app)
        assert labels.count(f"main ({PY})") == 1, "main once, not once per line"
        assert f"parse_records ({PY})" in labels and "Python by line" not in crumbs(app)
        assert cursor_label(app) == f"parse_records ({PY})"
        await pilot.press("1")
        assert app.views.top_view.ordered[0].label == f"parse_records ({PY})"
        assert app.views.top_view.ordered[0].self_count == 405 + 160
        await pilot.press("2", "G")
        await pilot.pause()
        assert "Python by line" in crumbs(app)
        assert cursor_label(app) == f"parse_records ({PY}:6)", "the hottest line of it"
        assert f"main ({PY}:31)" in tree_labels(app)


async def test_regrouping_keeps_the_expanded_path_and_the_cursor() -> None:
    app = BpftopApp(FakeSource([python_snapshot()]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        await pilot.press("right", "down")  # the user expands parse_records, selects its callee
        assert cursor_label(app) == "PyUnicode_Split" and not tree.following_hot
        for key, line in (("G", 5), ("G", None), ("G", 5)):
            await pilot.press(key)
            await pilot.pause()
            labels = tree_labels(app)
            assert cursor_label(app) == "PyUnicode_Split", key
            parent = f"parse_records ({PY}:{line})" if line else f"parse_records ({PY})"
            assert labels[labels.index("PyUnicode_Split") - 1] == parent


async def test_choosing_a_thread_keeps_the_expanded_path() -> None:
    source = FakeSource([python_snapshot()])
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("home", "e")
        opened, cursor = tree_labels(app), app.views.tree_view.cursor_path
        await pilot.press("6", "enter")
        assert source.threads == [99]
        source.push(python_snapshot(2, scale=2, time_mode="cumulative, thread 99"))
        await pilot.pause()
        await pilot.press("2")
        assert tree_labels(app) == opened and app.views.tree_view.cursor_path == cursor
