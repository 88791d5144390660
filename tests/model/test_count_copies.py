"""Snapshots' count arrays are reused only once no snapshot holds them."""

from __future__ import annotations

import numpy as np

from bpftop.symbols.frame import Frame
from bpftop.tui.model.array_tree import array_tree
from bpftop.tui.model.count_copies import KEPT, CountCopies
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
    assert room.base is not None and len(room.base) == 16, "the profile grew: room to grow"
    wider = copies.copy(np.ones(24, np.int64), 24)
    assert wider.base is not None and len(wider.base) == 24 + 3, "an eighth more at least"
    del wider
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


def test_tracked_copies_write_only_what_they_were_told_changed_and_the_nodes_made_since() -> None:
    copies, counts = CountCopies(tracked=True), np.zeros(12, np.int64)
    copies.copy(counts, 8)  # let go of at once: pooled (room for 9), as of now
    counts[:] = 5
    copies.changed(np.array([1, 3], np.int32))
    reused = copies.copy(counts, 9)
    assert reused.tolist() == [0, 5, 0, 5, 0, 0, 0, 0, 5], "told 1 and 3; node 8 is new"
    del reused
    copies.all_changed()
    assert copies.copy(counts, 9).tolist() == [5] * 9


def test_tracked_copies_equal_whole_ones_whatever_is_held() -> None:
    rng = np.random.default_rng(7)
    tracked, whole = CountCopies(tracked=True), CountCopies()
    counts, size, held = np.zeros(4096, np.int64), 100, []
    for step in range(300):
        if rng.random() < 0.05:
            counts[:size] = rng.integers(0, 9, size)
            tracked.all_changed()
        else:
            for _ in range(int(rng.integers(0, 4))):  # changes between two copies
                at = rng.integers(0, size, int(rng.integers(0, 20))).astype(np.int32)
                np.add.at(counts, at, 1)
                tracked.changed(at)
        size = min(len(counts), size + int(rng.integers(0, 40)))
        copy = tracked.copy(counts, size)
        assert np.array_equal(copy, whole.copy(counts, size)), step
        held.append((copy, copy.copy()))
        while len(held) > int(rng.integers(1, 4)):  # the app lets go of the oldest
            held.pop(0)
        assert all(np.array_equal(kept, then) for kept, then in held), "held copies unchanged"


def test_a_profiles_snapshots_have_its_counts_through_halving_and_removal() -> None:
    rng = np.random.default_rng(3)
    names = [Frame(f"f{n}", "/bin/a", 0) for n in range(12)]
    stacks = [tuple(names[i] for i in rng.integers(0, 12, rng.integers(1, 7))) for _ in range(300)]
    p, held = Profile(), []
    for stack in stacks:  # a tree much larger than what a tick changes
        p.add("a", stack, 2)
    for tick in range(60):
        for _ in range(int(rng.integers(0, 6))):
            p.add("a", stacks[int(rng.integers(0, len(stacks)))], int(rng.integers(1, 4)))
        if tick % 7 == 3:
            p.remove("a", stacks[tick], 1)
        if tick % 11 == 5:
            p.halve()
        tree = array_tree(p.tree())
        size = p.store.size
        assert np.array_equal(tree.self_count, p._self[:size]), tick
        assert np.array_equal(tree.total, p._total[:size]), tick
        held.append((tree, tree.total.copy()))
        del held[: -int(rng.integers(1, 3))]
    assert all(np.array_equal(tree.total, then) for tree, then in held)
