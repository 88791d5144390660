"""Every derived view of a tree without samples (a probe that has not fired yet,
a reset, a thread with nothing) is an empty view, never an error."""

from __future__ import annotations

import itertools

import pytest

from bpftop.symbols.frame import Frame
from bpftop.tui.model.callers_tree import callers_tree
from bpftop.tui.model.derived import (
    filter_tree,
    hot_by_symbol,
    hot_from_tree,
    hottest_path_of,
    keep_frames,
    rename_frames,
)
from bpftop.tui.model.flame_layout import flame_rows
from bpftop.tui.model.idle import drop_idle
from bpftop.tui.model.node_paths import hot_chain, next_match
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.viewstate import FRAME_FILTERS, derive_view


def process_only() -> CallNode:
    profile = Profile()
    profile.add("demo", [], 5)  # samples with no frame at all
    return profile.tree()


EMPTY = {"plain": lambda: CallNode("all"), "live": lambda: Profile().tree(), "bare": process_only}
KEY = ("main", "/bin/p", False)


@pytest.mark.parametrize("kind", sorted(EMPTY))
def test_every_derived_view_of_an_empty_tree(kind: str) -> None:
    tree = EMPTY[kind]()
    total = tree.total_count
    for frames, match, inline, by_function, idle in itertools.product(
        FRAME_FILTERS, (None, lambda node: "main" in node.label), *[(False, True)] * 3
    ):
        derived = derive_view(tree, (), frames, match, inline, by_function, idle)
        assert derived.tree.total_count in (0, total) and not derived.hot
    assert rename_frames(tree, lambda key: key).total_count == total
    assert keep_frames(tree, lambda node: False).total_count == total
    assert filter_tree(tree, lambda node: False) is None
    assert hot_from_tree(tree) == () and hot_by_symbol(tree) == ()
    assert hottest_path_of(tree, KEY) is None
    assert callers_tree(tree, KEY).total_count == 0
    assert flame_rows(tree, (), 80, 64) is not None
    assert drop_idle(tree)[1] == 0
    assert next_match(tree, lambda node: True, None, 1) in (None, (("demo", "", False),))
    assert len(hot_chain(tree, total)) <= 1


def test_renaming_a_tree_with_samples_still_works() -> None:
    profile = Profile()
    profile.add("p", [Frame("main", "/bin/p", 0), Frame("f", "/bin/p", 0)], 3)
    renamed = rename_frames(profile.tree(), lambda key: ("x", *key[1:]))
    assert renamed.total_count == 3
