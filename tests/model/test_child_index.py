"""The call tree's child index against a dict: batches, growth, probing, misses."""

from __future__ import annotations

import numpy as np

from bpftop.tui.model.child_index import MAX_LOAD, ChildIndex, slots_of


def test_finds_what_was_added_across_growth_and_misses_the_rest() -> None:
    rng = np.random.default_rng(7)
    index = ChildIndex(bits=4)  # 16 slots: grows many times, probes often
    parent = np.full(1, -1, np.int32)  # the columns: node 0 is the root
    key_id = np.full(1, -1, np.int32)
    oracle: dict[tuple[int, int], int] = {}
    for _ in range(30):
        parents = rng.integers(0, 5_000, 400).astype(np.int32)
        keys = rng.integers(0, 300, 400).astype(np.int32)
        pairs = sorted(set(zip(parents.tolist(), keys.tolist(), strict=True)) - set(oracle))
        made = np.arange(len(parent), len(parent) + len(pairs), dtype=np.int32)
        parent = np.concatenate([parent, np.array([p for p, _ in pairs], np.int32)])
        key_id = np.concatenate([key_id, np.array([k for _, k in pairs], np.int32)])
        index.add(made, parent, key_id)
        oracle.update(zip(pairs, made.tolist(), strict=True))
        asked_parents = np.concatenate([parents, parents + 10_000])  # half of them absent
        asked_keys = np.concatenate([keys, keys])
        expected = [
            oracle.get(pair, -1)
            for pair in zip(asked_parents.tolist(), asked_keys.tolist(), strict=True)
        ]
        assert index.find(asked_parents, asked_keys, parent, key_id).tolist() == expected
        one_by_one = [
            index.find_one(p, k, parent, key_id)
            for p, k in zip(asked_parents[::7].tolist(), asked_keys[::7].tolist(), strict=True)
        ]
        assert one_by_one == expected[::7]
    assert index.size == len(oracle) > 5_000
    assert index.size <= MAX_LOAD * index.capacity < 2 * index.size  # 4 B a slot


def test_slots_of_keep_parent_and_key_apart() -> None:
    parents = np.array([0, 1, 70_000, 2**31 - 1], np.int32)
    keys = np.array([1, 0, 5, 2**31 - 1], np.int32)
    slots = slots_of(parents, keys)
    assert (slots >> 32).tolist() == parents.tolist()
    assert (slots & 0xFFFFFFFF).tolist() == keys.tolist()
    assert (slots >= 0).all()
