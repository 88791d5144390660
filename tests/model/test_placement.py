"""Placing batches of stacks in the store, against a dict of paths: shared
prefixes, stacks alone below their first miss, repeats inside a batch."""

from __future__ import annotations

import numpy as np

from bpftop.tui.model.placement import ADD_UP_LEAVES, FEW_WALKED, add_up, mark_firsts, place
from bpftop.tui.model.store import FIRST_OF_FUNCTION, FIRST_OF_SYMBOL, INLINED, ROOT, Ids, TreeStore


def _batch(rng: np.random.Generator, stacks: int) -> list[list[int]]:
    """Stacks of keys: a few processes, a few common prefixes, random tails;
    some stacks repeated, some the prefix of another."""
    prefixes = [[1, 2, 3], [1, 2, 4, 5], [1, 6], [7]]
    made = []
    for _ in range(stacks):
        stack = list(prefixes[int(rng.integers(len(prefixes)))])
        stack += rng.integers(10, 14, int(rng.integers(0, 12))).tolist()
        made.append(stack)
    made += made[: stacks // 5]  # repeats inside the batch
    made += [stack[: len(stack) // 2] for stack in made[: stacks // 5] if len(stack) > 1]
    return made


def _children(store: TreeStore, node: int) -> list[int]:
    kids, child = [], int(store.first_child[node])
    while child >= 0:
        kids.append(child)
        child = store.next_sibling[child]
    return kids


def test_batches_match_a_dict_of_paths() -> None:
    rng = np.random.default_rng(3)
    store = TreeStore()
    oracle: dict[tuple[int, ...], int] = {(): ROOT}
    for batch_size in (1, 2, 40, 300, 5, 800):
        stacks = _batch(rng, batch_size)
        lengths = np.array([len(stack) for stack in stacks], np.int64)
        starts = np.cumsum(lengths) - lengths
        keys = np.array([key for stack in stacks for key in stack], np.int32)
        flags = rng.integers(0, 4, len(keys)).astype(np.uint8)
        nodes = place(store, keys, flags, starts, lengths)
        for start, stack in zip(starts.tolist(), stacks, strict=True):
            for depth in range(1, len(stack) + 1):
                path, node = tuple(stack[:depth]), int(nodes[start + depth - 1])
                assert oracle.setdefault(path, node) == node, path
                assert int(store.parent[node]) == oracle[path[:-1]]
                assert int(store.key_id[node]) == path[-1]
                assert int(store.depth[node]) == depth
        assert store.size == len(oracle) == len(set(oracle.values()))
        listed = [child for node in range(store.size) for child in _children(store, node)]
        assert sorted(listed) == list(range(1, store.size))  # each node linked once
        assert all(int(store.parent[child]) == node for node in range(store.size)
                   for child in _children(store, node))  # fmt: skip
        found = store.find(store.parent[1 : store.size], store.key_id[1 : store.size])
        assert found.tolist() == list(range(1, store.size))


def test_the_last_stacks_walked_one_by_one_find_and_share_nodes() -> None:
    """A big batch leaves the depth walk with a few deep stacks: known to the
    leaf, known halfway then new, new and taking the same way twice."""
    rng = np.random.default_rng(5)
    store = TreeStore()
    deep = [1, *rng.integers(10, 200, 60).tolist()]
    place(store, np.array(deep, np.int32), np.zeros(61, np.uint8), np.zeros(1, np.int64),
          np.array([61], np.int64))  # fmt: skip
    known = store.size
    wide = [[2, int(k)] for k in rng.permutation(np.arange(1000, 1000 + FEW_WALKED * 4))]
    halfway = [*deep[:30], 7, 7, 7]
    stacks = [*wide, deep, halfway, [3, 4, 5, 6, 7], [3, 4, 5, 6, 8], deep[:10]]
    lengths = np.array([len(stack) for stack in stacks], np.int64)
    starts = np.cumsum(lengths) - lengths
    keys = np.array([key for stack in stacks for key in stack], np.int32)
    flags = (np.arange(len(keys)) % 3).astype(np.uint8)
    nodes = place(store, keys, flags, starts, lengths).tolist()
    oracle: dict[tuple[int, ...], int] = {}
    for start, stack in zip(starts.tolist(), stacks, strict=True):
        for depth in range(1, len(stack) + 1):
            node = nodes[start + depth - 1]
            assert oracle.setdefault(tuple(stack[:depth]), node) == node
            assert int(store.key_id[node]) == stack[depth - 1]
            assert int(store.depth[node]) == depth
            parent = oracle[tuple(stack[: depth - 1])] if depth > 1 else ROOT
            assert int(store.parent[node]) == parent
    at = {tuple(stack): int(start) for start, stack in zip(starts.tolist(), stacks, strict=True)}
    assert max(nodes[at[tuple(deep)] : at[tuple(deep)] + 61]) < known  # all found
    assert store.size == len(oracle) + 1
    first_new = at[tuple(halfway)] + 30
    assert store.flags[nodes[first_new]] == flags[first_new]


def test_new_nodes_take_the_flags_of_their_first_position() -> None:
    store = TreeStore()
    keys = np.array([1, 2, 9, 1, 2, 8, 1, 3], np.int32)  # three stacks: 1;2;9  1;2;8  1;3
    flags = np.array([1, 2, 0, 3, 3, 1, 3, 2], np.uint8)
    starts, lengths = np.array([0, 3, 6], np.int64), np.array([3, 3, 2], np.int64)
    nodes = place(store, keys, flags, starts, lengths)
    assert store.flags[nodes].tolist() == [1, 2, 0, 1, 2, 1, 1, 2]
    again = place(store, keys, np.zeros(8, np.uint8), starts, lengths)
    assert again.tolist() == nodes.tolist()
    assert store.size == 1 + 5


def test_add_up_reaches_every_ancestor_once_per_leaf() -> None:
    store = TreeStore()
    keys = np.array([1, 2, 1, 1, 4], np.int32)  # stacks 1;2;1 (recursive) and 1;4
    starts, lengths = np.array([0, 3], np.int64), np.array([3, 2], np.int64)
    # FIRST_OF_FUNCTION (4) but on the inner 1; FIRST_OF_SYMBOL (8) on both 1s, not on 2 or 4.
    flags = np.array([12, 4, 8, 12, 4], np.uint8)
    nodes = place(store, keys, flags, starts, lengths)
    n = nodes.tolist()
    leaves = np.array([n[2], n[4], n[1], ROOT, n[2]], np.int32)
    total, fn_total, symbol_total = (np.zeros(n, np.int64) for n in (store.size, 8, 8))
    counts = np.array([1, 10, 100, 1000, 10000], np.int64)
    add_up(store, leaves, counts, total, fn_total, symbol_total)
    assert store.size == 5
    by_node = {ROOT: 11111, n[0]: 10111, n[1]: 10101, n[2]: 10001, n[4]: 10}
    assert total.tolist() == [by_node[node] for node in range(5)]
    assert fn_total.tolist() == [0, 10111, 10101, 0, 10, 0, 0, 0]  # 1 once for 1;2;1
    assert symbol_total.tolist() == [0, 10111 + 10001, 0, 0, 0, 0, 0, 0]  # as flagged


def test_add_up_over_several_gathers_matches_a_walk_up_each_leaf() -> None:
    """More leaves than one gather takes, of many depths (the root and process
    nodes among them), against adding along each leaf's path one by one."""
    rng = np.random.default_rng(11)
    store = TreeStore()
    stacks = _batch(rng, ADD_UP_LEAVES)
    lengths = np.array([len(stack) for stack in stacks], np.int64)
    keys = np.array([key for stack in stacks for key in stack], np.int32)
    flags = rng.choice(np.array([0, 4, 8, 12], np.uint8), len(keys))
    place(store, keys, flags, np.cumsum(lengths) - lengths, lengths)
    leaves = rng.permutation(store.size)[: ADD_UP_LEAVES + 300].astype(np.int32)
    counts = rng.integers(1, 1000, len(leaves))
    expected = [np.zeros(n, np.int64) for n in (store.size, 20, 20)]
    for leaf, count in zip(leaves.tolist(), counts.tolist(), strict=True):
        node = leaf
        while True:
            expected[0][node] += count
            for flag, table in ((FIRST_OF_FUNCTION, expected[1]), (FIRST_OF_SYMBOL, expected[2])):
                if store.flags[node] & flag:
                    table[store.key_id[node]] += count
            if node == ROOT:
                break
            node = int(store.parent[node])
    got = [np.zeros(n, np.int64) for n in (store.size, 20, 20)]
    add_up(store, leaves, counts, *got)
    assert [g.tolist() for g in got] == [e.tolist() for e in expected]


def test_only_children_stay_out_of_the_index_until_a_sibling_comes() -> None:
    store = TreeStore()

    def add(keys: list[int]) -> Ids:
        at = np.array(keys, np.int32)
        lengths = np.array([len(keys)], np.int64)
        return place(store, at, np.zeros(len(keys), np.uint8), np.zeros(1, np.int64), lengths)

    chain = add([1, 2, 3, 4]).tolist()
    assert store._index.size == 0  # a chain of only children
    branch = add([1, 2, 5]).tolist()  # node 1;2 gets a second child
    assert store._index.size == 2
    assert add([1, 2, 3, 4]).tolist() == chain
    assert add([1, 2, 5]).tolist() == branch
    third = add([1, 2, 6, 7]).tolist()
    assert third[:2] == chain[:2]
    assert store._index.size == 3
    under = np.full(4, chain[1], np.int32)
    found = store.find(under, np.array([3, 5, 6, 9], np.int32))
    assert found.tolist() == [chain[2], branch[2], third[2], -1]
    below = store.find(np.array([third[2], ROOT], np.int32), np.array([7, 2], np.int32))
    assert below.tolist() == [third[3], -1]


def _firsts_one_by_one(keys: list[int], inlined: list[bool], lengths: list[int]) -> list[int]:
    """mark_firsts' flags, stack by stack in Python: the outermost frame of each
    key, and the outermost symbol (a frame not inlined, or the first) of each key."""
    flags, at = [], 0
    for length in lengths:
        seen: set[int] = set()
        symbols: set[int] = set()
        flags.append(0)  # the process
        for position in range(at + 1, at + length):
            key, flag = keys[position], 0
            if key not in seen:
                seen.add(key)
                flag |= FIRST_OF_FUNCTION
            if (not inlined[position] or position == at + 1) and key not in symbols:
                symbols.add(key)
                flag |= FIRST_OF_SYMBOL
            flags.append(flag | (INLINED if inlined[position] else 0))
        at += length
    return flags


def test_mark_firsts_marks_the_outermost_frame_and_symbol_of_each_key() -> None:
    rng = np.random.default_rng(11)
    for _ in range(50):
        lengths = rng.integers(1, 12, int(rng.integers(1, 30)))
        keys = rng.integers(0, 6, int(lengths.sum())).astype(np.int32)
        starts = np.cumsum(lengths) - lengths
        inlined = rng.random(len(keys)) < 0.4
        inlined[starts] = False  # a process
        flags = np.where(inlined, INLINED, 0).astype(np.uint8)
        mark_firsts(keys, flags, starts, lengths)
        expected = _firsts_one_by_one(keys.tolist(), inlined.tolist(), lengths.tolist())
        assert flags.tolist() == expected
