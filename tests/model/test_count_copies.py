"""Snapshots' count arrays are reused only once no snapshot holds them."""

from __future__ import annotations

import numpy as np

from bpftop.symbols.frame import Frame
from bpftop.tui.model.count_copies import KEPT, CountCopies
from bpftop.tui.model.path_tree import array_tree
from bpftop.tui.model.profile import Profile


def test_a_copy_goes_into_an_array_only_when_no_view_of_it_is_alive() -> None:
    copies, counts = CountCopies(), np.arange(8, dtype=np.int64)
    held = copies.copy(counts, 5)
    counts += 100
    again = copies.copy(counts, 5)
    assert held.tolist() == [0, 1, 2, 3, 4], "a held copy is never written"
    assert not np.shares_memory(held, again)
    kept = id(held.base)  # (a reference would hold it)
    del held
    reused = copies.copy(counts, 5)
    assert id(reused.base) == kept and reused.tolist() == [100, 101, 102, 103, 104]
    assert again.tolist() == [100, 101, 102, 103, 104]


def test_arrays_too_small_for_a_grown_profile_are_replaced_and_the_pool_is_bounded() -> None:
    copies = CountCopies()
    copies.copy(np.zeros(16, np.int64), 8)  # let go of at once
    room = copies.copy(np.ones(16, np.int64), 12)
    assert room.base is not None and len(room.base) == 12 + 1, "the profile grew: an eighth more"
    assert room.tolist() == [1] * 12
    held = [copies.copy(np.ones(16, np.int64), 16) for _ in range(KEPT + 3)]
    assert len({id(array.base) for array in held}) == KEPT + 3, "none shared while held"
    assert len(copies._arrays) == KEPT


def test_live_snapshots_keep_their_counts_while_the_profile_reuses_released_ones() -> None:
    p = Profile()
    frames = [(Frame("main", "/bin/a", 0), Frame(f"f{n}", "/bin/a", 0)) for n in range(50)]
    trees = []
    for tick in range(12):
        for stack in frames[: 5 + tick]:
            p.add("a", stack, tick + 1)
        trees.append(p.tree())
        if tick % 3:
            del trees[0]  # the app lets go of some
    for tree in trees:
        live = array_tree(tree)
        assert live.total[0] == tree.total_count == live.self_count.sum()
    expected = sum((t + 1) * (5 + t) for t in range(12))
    assert p.tree().total_count == expected
