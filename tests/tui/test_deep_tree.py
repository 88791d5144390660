"""A call tree 5,000 frames deep (built in the model, past the 512-frame cut that
saved profiles get on read) opens, expands and collapses without RecursionError."""

from __future__ import annotations

import sys

from bpftop.tui.app.app import BpftopApp
from tests.tui.fake_source import FakeSource

from .helpers import SIZE, snapshot_of, tree_labels

DEPTH = 5_000


async def test_a_5000_frame_deep_tree_expands() -> None:
    assert sys.getrecursionlimit() < DEPTH  # a recursive walk of one frame per level would fail
    names = ["main", *(f"level_{n}" for n in range(DEPTH - 1))]
    app = BpftopApp(FakeSource([snapshot_of([(names, 7), (["main", "idle"], 1)])]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        # the tree opens on the hot path: every level is a row, the cursor on the leaf
        labels = tree_labels(app)
        assert labels[:3] == ["small", "main", "level_0"]
        assert labels[DEPTH] == f"level_{DEPTH - 2}"
        assert tree.rows[tree.cursor].node.label == f"level_{DEPTH - 2}"
        assert tree.rows[tree.cursor].depth == DEPTH
        await pilot.press("home", "left")  # collapse the process: one row
        assert tree_labels(app) == ["small"]
        await pilot.press("e")  # the hottest chain below it, all 5,000 levels again
        assert len(tree_labels(app)) == DEPTH + 2  # small, main, level_*, idle
        assert tree_labels(app)[-1] == "idle"
