"""Which node is a parent's child with a given key: a hash index over numpy arrays.

The call tree finds a node's child by (parent, key id) once per frame of every
new stack. A dict of Python ints cost ~110 bytes a node (40,000 stacks of
depth 40 make ~900,000 nodes); this open-addressing table costs 12 bytes a
slot at a load of at most 0.7, and answers a batch of pairs with a few
vectorized passes. Entries are only ever added. No Textual here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Slots = npt.NDArray[np.int64]
"""``parent << 32 | key id``: never negative."""
Ids = npt.NDArray[np.int32]

EMPTY = -1
MAX_LOAD = 0.7
FEW = 32
"""Slots left in a batch that are probed one by one rather than in numpy rounds."""
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: Fibonacci hashing


def slots_of(parents: npt.NDArray[np.integer[Any]], keys: npt.NDArray[np.integer[Any]]) -> Slots:
    """The index's keys for (parent, key id) pairs (or any two ids below 2**31)."""
    slots: Slots = parents.astype(np.int64) << 32
    slots |= keys.astype(np.int64)
    return slots


class ChildIndex:
    """``slot -> node`` with linear probing; slots are added once and never removed."""

    def __init__(self, bits: int = 10) -> None:
        self.size = 0
        self._bits = bits
        self._slots: Slots = np.full(1 << bits, EMPTY, np.int64)
        self._nodes: Ids = np.zeros(1 << bits, np.int32)

    @property
    def capacity(self) -> int:
        return len(self._slots)

    def find(self, slots: Slots) -> Ids:
        """The node of each slot, -1 where there is none."""
        found = np.full(len(slots), -1, np.int32)
        todo = np.arange(len(slots))
        at = self._home(slots)
        mask = self.capacity - 1
        while len(todo) > FEW:
            held = self._slots[at]
            hit = held == slots[todo]
            found[todo[hit]] = self._nodes[at[hit]]
            going_on = ~hit & (held != EMPTY)
            todo, at = todo[going_on], (at[going_on] + 1) & mask
        table = self._slots
        for i, position in zip(todo.tolist(), at.tolist(), strict=True):
            slot = int(slots[i])
            while (held_slot := int(table[position])) != EMPTY:
                if held_slot == slot:
                    found[i] = self._nodes[position]
                    break
                position = (position + 1) & mask
        return found

    def add(self, slots: Slots, nodes: Ids) -> None:
        """Add slots (distinct, none already present) and their nodes."""
        if (self.size + len(slots)) > MAX_LOAD * self.capacity:
            bits = self._bits
            while (self.size + len(slots)) > MAX_LOAD * (1 << bits):
                bits += 1
            held = np.flatnonzero(self._slots != EMPTY)
            old_slots, old_nodes = self._slots[held], self._nodes[held]
            self._bits = bits
            self._slots = np.full(1 << bits, EMPTY, np.int64)
            self._nodes = np.zeros(1 << bits, np.int32)
            self._place(old_slots, old_nodes)
        self._place(slots, nodes)
        self.size += len(slots)

    def _place(self, slots: Slots, nodes: Ids) -> None:
        # Each round, every slot still to place looks at its position: the first
        # of those that find it empty takes it, the others move on one. The last
        # few (long probe runs) go one by one: a round costs as much for one.
        todo = np.arange(len(slots))
        at = self._home(slots)
        mask = self.capacity - 1
        while len(todo) > FEW:
            empty = np.flatnonzero(self._slots[at] == EMPTY)
            taken, first = np.unique(at[empty], return_index=True)
            winners = todo[empty[first]]
            self._slots[taken] = slots[winners]
            self._nodes[taken] = nodes[winners]
            left = np.ones(len(todo), np.bool_)
            left[empty[first]] = False
            todo, at = todo[left], (at[left] + 1) & mask
        table = self._slots
        for i, position in zip(todo.tolist(), at.tolist(), strict=True):
            while table[position] != EMPTY:
                position = (position + 1) & mask
            table[position] = slots[i]
            self._nodes[position] = nodes[i]

    def _home(self, slots: Slots) -> npt.NDArray[np.int64]:
        hashed = slots.astype(np.uint64) * _GOLDEN  # wraps modulo 2**64, as meant
        return (hashed >> np.uint64(64 - self._bits)).astype(np.int64)
