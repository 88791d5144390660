"""Stacks deeper than ``MAX_FRAMES``: cut on read (counted, reported), and every view works."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.cli.files import saved_snapshot
from bpftop.tui.collect.static_source import StaticSource
from bpftop.tui.formats.profile_io import load_tree, read_saved
from bpftop.tui.formats.saved import CUT_FRAME, MAX_FRAMES


def deep_file(folder: Path, depth: int) -> Path:
    path = folder / f"deep{depth}.folded"
    frames = ";".join(f"f{i}" for i in range(depth))
    path.write_text(f"app;{frames} 5\napp;main;shallow 2\n")
    return path


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_deep_stacks_are_cut_and_counted(depth: int, tmp_path: Path) -> None:
    path = deep_file(tmp_path, depth)
    saved = read_saved(path)
    deep = max(saved.stacks, key=lambda s: len(s.frames))
    assert len(deep.frames) == MAX_FRAMES and deep.frames[-1].name == CUT_FRAME
    assert saved.truncated == 1 and saved.total == 7
    loaded = load_tree(path)
    assert loaded.truncated == 1 and loaded.tree.total_count == 7
    assert f"1 stacks deeper than {MAX_FRAMES} frames cut" in saved_snapshot(loaded, path).message


@pytest.mark.parametrize("depth", [1_500, 100_000])
async def test_expanding_a_deep_stack_works(depth: int, tmp_path: Path) -> None:
    path = deep_file(tmp_path, depth)
    snap = saved_snapshot(load_tree(path), path)
    app = BpftopApp(StaticSource(snap))
    started = time.monotonic()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("e")  # expand all: the call tree's rows
        await pilot.pause()
        labels = [row.node.label for row in app.views.tree_view.rows]
        assert CUT_FRAME in labels and len(labels) >= MAX_FRAMES
        for key in ("4", "3", "2"):
            await pilot.press(key)
            await pilot.pause()
    assert app.return_code in (None, 0)
    assert time.monotonic() - started < 30
