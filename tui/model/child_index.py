"""Which node is a parent's child with a given key: a hash index over numpy arrays.

The call tree finds a node's child by (parent, key id) once per frame of every
new stack. A dict of Python ints cost ~110 bytes a node (40,000 stacks of
depth 40 make ~1.5 M nodes); this open-addressing table holds only node ids,
4 bytes a slot at a load of at most 0.7, and compares a candidate by reading
its parent and key from the tree's own columns. A batch of pairs is answered
with a few vectorized passes. Nodes are only ever added. The store indexes
only nodes with siblings (an only child it finds through ``first_child``).
No Textual here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int32]
Slots = npt.NDArray[np.int64]
"""``parent << 32 | key id``: what a node is hashed by."""

EMPTY = -1
MAX_LOAD = 0.7
FEW = 32
"""Pairs left in a batch that are probed one by one rather than in numpy rounds."""
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: Fibonacci hashing


def slots_of(parents: npt.NDArray[np.integer[Any]], keys: npt.NDArray[np.integer[Any]]) -> Slots:
    """``parent << 32 | key`` for pairs of ids below 2**31."""
    slots: Slots = parents.astype(np.int64) << 32
    slots |= keys.astype(np.int64)
    return slots


class ChildIndex:
    """Node ids by (parent, key id), with linear probing.

    The caller owns the columns (``parent``, ``key_id``: one row per node) and
    passes them in; a node is added once its row is written.
    """

    def __init__(self, bits: int = 10) -> None:
        self.size = 0
        self._bits = bits
        self._nodes: Ids = np.full(1 << bits, EMPTY, np.int32)

    @property
    def capacity(self) -> int:
        return len(self._nodes)

    def find(self, parents: Ids, keys: Ids, parent: Ids, key_id: Ids) -> Ids:
        """The node that is ``parents[i]``'s child with ``keys[i]``, -1 where none is."""
        found = np.full(len(parents), EMPTY, np.int32)
        todo = np.arange(len(parents))
        at = self._home(slots_of(parents, keys))
        mask = self.capacity - 1
        table = self._nodes
        while len(todo) > FEW:
            node = table[at]
            held = node != EMPTY
            hit = held & (parent[node] == parents[todo]) & (key_id[node] == keys[todo])
            found[todo[hit]] = node[hit]
            going_on = held & ~hit
            todo, at = todo[going_on], (at[going_on] + 1) & mask
        for i, position in zip(todo.tolist(), at.tolist(), strict=True):
            found[i] = self.find_one(int(parents[i]), int(keys[i]), parent, key_id, position)
        return found

    def find_one(
        self, wanted_parent: int, wanted_key: int, parent: Ids, key_id: Ids, position: int = -1
    ) -> int:
        """The node that is ``wanted_parent``'s child with ``wanted_key``, -1 if
        none is; probed from ``position`` (default: the pair's home slot)."""
        if position < 0:
            hashed = ((wanted_parent << 32 | wanted_key) * int(_GOLDEN)) & 0xFFFF_FFFF_FFFF_FFFF
            position = hashed >> (64 - self._bits)
        table, mask = self._nodes, self.capacity - 1
        while (node_id := int(table[position])) != EMPTY:
            if parent[node_id] == wanted_parent and key_id[node_id] == wanted_key:
                return node_id
            position = (position + 1) & mask
        return EMPTY

    def add(self, nodes: Ids, parent: Ids, key_id: Ids) -> None:
        """Index ``nodes`` (distinct, rows written, none indexed yet)."""
        if self.size + len(nodes) > MAX_LOAD * self.capacity:
            bits = self._bits
            while self.size + len(nodes) > MAX_LOAD * (1 << bits):
                bits += 1
            indexed = self._nodes[self._nodes != EMPTY]
            self._bits = bits
            self._nodes = np.full(1 << bits, EMPTY, np.int32)
            self._place(indexed, parent, key_id)
        self._place(nodes, parent, key_id)
        self.size += len(nodes)

    def _place(self, nodes: Ids, parent: Ids, key_id: Ids) -> None:
        # Each round, every node still to place looks at its position: of those
        # that find it empty, one takes it (the one whose write numpy kept: no
        # sort to choose), the others move on one. The last few (long probe
        # runs) go one by one: a round costs as much for one.
        todo = nodes
        at = self._home(slots_of(parent[nodes], key_id[nodes]))
        mask = self.capacity - 1
        table = self._nodes
        while len(todo) > FEW:
            empty = table[at] == EMPTY
            table[at[empty]] = todo[empty]
            left = table[at] != todo
            todo, at = todo[left], (at[left] + 1) & mask
        for node, position in zip(todo.tolist(), at.tolist(), strict=True):
            while table[position] != EMPTY:
                position = (position + 1) & mask
            table[position] = node

    def _home(self, slots: Slots) -> npt.NDArray[np.int64]:
        hashed = slots.astype(np.uint64) * _GOLDEN  # wraps modulo 2**64, as meant
        return (hashed >> np.uint64(64 - self._bits)).astype(np.int64)
