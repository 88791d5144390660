"""The call tree's child index against a dict: batches, growth, probing, misses."""

from __future__ import annotations

import numpy as np

from bpftop.tui.model.child_index import MAX_LOAD, ChildIndex, slots_of


def test_finds_what_was_added_across_growth_and_misses_the_rest() -> None:
    rng = np.random.default_rng(7)
    index = ChildIndex(bits=4)  # 16 slots: grows many times, probes often
    oracle: dict[int, int] = {}
    for _ in range(30):
        parents = rng.integers(0, 5_000, 400).astype(np.int32)
        keys = rng.integers(0, 300, 400).astype(np.int32)
        slots = np.unique(slots_of(parents, keys))
        fresh = slots[[int(s) not in oracle for s in slots.tolist()]]
        nodes = np.arange(len(oracle), len(oracle) + len(fresh), dtype=np.int32)
        index.add(fresh, nodes)
        oracle.update(zip(fresh.tolist(), nodes.tolist(), strict=True))
        asked = np.concatenate([slots, slots_of(parents + 10_000, keys)])  # half absent
        expected = [oracle.get(s, -1) for s in asked.tolist()]
        assert index.find(asked).tolist() == expected
    assert index.size == len(oracle) > 5_000
    assert index.size <= MAX_LOAD * index.capacity < 2 * index.size  # 12 B a slot


def test_slots_of_keep_parent_and_key_apart() -> None:
    parents = np.array([0, 1, 70_000, 2**31 - 1], np.int32)
    keys = np.array([1, 0, 5, 2**31 - 1], np.int32)
    slots = slots_of(parents, keys)
    assert (slots >> 32).tolist() == parents.tolist()
    assert (slots & 0xFFFFFFFF).tolist() == keys.tolist()
    assert (slots >= 0).all()
