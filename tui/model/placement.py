"""Where a batch of new stacks goes in the call tree: the node of every position.

A stack's positions are nodes the store already has down to its first miss;
from there on, every node is new, shared at most with other stacks of the
batch that took the same way. So the batch is walked depth by depth only
while stacks share a way: positions on known nodes are looked up in the
store's index, new positions are merged by (parent, key) with one sort per
depth. A stack whose new node no other stack shares is *alone*: the rest of
it is a chain of new nodes, made for all alone stacks at once, with no
lookup and no sort. With ~40,000 random stacks of depth ~45 (bench.model_scale)
nearly every stack is alone a few levels below its first miss, and the depth
walk stops there instead of at the deepest frame. All new rows are written
and indexed in one call at the end. No Textual here.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bpftop.tui.model.child_index import slots_of
from bpftop.tui.model.store import (
    FIRST_OF_FUNCTION,
    FIRST_OF_SYMBOL,
    INLINED,
    ROOT,
    Counts,
    Ids,
    TreeStore,
)

Flags = npt.NDArray[np.uint8]
ADD_UP_LEAVES = 1024
"""Leaves whose paths ``add_up`` gathers at once (at depth ~45: ~46,000 node ids)."""
FEW_WALKED = 64
"""Stacks still walked by depth below which they are walked one by one: a
round of the depth walk costs ~0.1 ms however few stacks it moves, and the
last ones are stacks whose path the store has all along (known, to the leaf)."""


class _NewRows:
    """Rows made so far, numbered from the store's size in the order made."""

    def __init__(self, first: int) -> None:
        self.next = first
        self.parents: list[Ids] = []
        self.keys: list[Ids] = []
        self.flags: list[Flags] = []
        self.depths: list[npt.NDArray[np.int16]] = []

    def make(self, parents: Ids, keys: Ids, flags: Flags, depths: npt.NDArray[np.int16]) -> Ids:
        """Ids for new rows (in order)."""
        ids = np.arange(self.next, self.next + len(parents), dtype=np.int32)
        self.next += len(parents)
        self.parents.append(parents)
        self.keys.append(keys)
        self.flags.append(flags)
        self.depths.append(depths)
        return ids


def place(store: TreeStore, key_ids: Ids, flags: Flags, starts: Counts, lengths: Counts) -> Ids:
    """The node of every position of stacks laid one after another (runs of
    ``lengths`` from ``starts``; position 0 of a stack is at depth 1, under the
    root); missing nodes are added with the ``flags`` of their first position."""
    nodes = np.empty(len(key_ids), np.int32)
    made = _NewRows(store.size)
    alone, alone_from = _shared(store, key_ids, flags, starts, lengths, nodes, made)
    firsts, left = starts[alone] + alone_from, lengths[alone] - alone_from
    _chains(key_ids, flags, firsts, alone_from + 1, left, nodes, made)
    if made.parents:
        store.append(
            np.concatenate(made.parents),
            np.concatenate(made.keys),
            np.concatenate(made.flags),
            np.concatenate(made.depths),
        )
    return nodes


def _shared(
    store: TreeStore, key_ids: Ids, flags: Flags, starts: Counts, lengths: Counts,
    nodes: Ids, made: _NewRows,
) -> tuple[Counts, Counts]:  # fmt: skip
    """Walk the stacks depth by depth while they share nodes; returns the
    stacks left alone and the position each one's own chain starts at."""
    track = np.arange(len(lengths), dtype=np.int64)  # stacks still walked
    known = np.ones(len(track), np.bool_)  # its nodes so far are all in the store
    parent = np.full(len(track), ROOT, np.int32)
    alone: list[Counts] = [np.zeros(0, np.int64)]
    alone_from: list[Counts] = [np.zeros(0, np.int64)]
    position = 0
    while len(track):
        if len(track) <= FEW_WALKED:
            columns = (key_ids, flags, starts, lengths, nodes)
            _walk_few(store, *columns, made, track, known, parent, position)
            break
        at = starts[track] + position
        keys = key_ids[at]
        node = np.full(len(track), -1, np.int32)
        if known.any():
            node[known] = store.find(parent[known], keys[known])
        new = np.flatnonzero(node < 0)
        single = np.zeros(len(track), np.bool_)
        if len(new):
            _, first, inverse, count = np.unique(
                slots_of(parent[new], keys[new]),
                return_index=True, return_inverse=True, return_counts=True,
            )  # fmt: skip
            inverse = inverse.reshape(-1)
            rows = new[first]
            depth = np.full(len(rows), position + 1, np.int16)
            ids = made.make(parent[rows], keys[rows], flags[at[rows]], depth)
            node[new] = ids[inverse]
            known[new] = False
            single[new] = count[inverse] == 1
        nodes[at] = node
        position += 1
        longer = lengths[track] > position
        leaving = single & longer
        alone.append(track[leaving])
        alone_from.append(np.full(int(leaving.sum()), position, np.int64))
        going_on = longer & ~single
        track, known, parent = track[going_on], known[going_on], node[going_on]
    return np.concatenate(alone), np.concatenate(alone_from)


def _walk_few(
    store: TreeStore, key_ids: Ids, flags: Flags, starts: Counts, lengths: Counts,
    nodes: Ids, made: _NewRows, track: Counts, known: npt.NDArray[np.bool_], parent: Ids,
    position: int,
) -> None:  # fmt: skip
    """The last few stacks of the depth walk (``track``, at ``position`` under
    ``parent``), one by one: down the store while it has their nodes (``known``),
    then new nodes, shared by those of them that take the same way."""
    new: dict[tuple[int, int], int] = {}  # (parent, key) -> node made here
    rows: list[tuple[int, int, int, int]] = []  # parent, key, flags, depth of each
    positions, found = [], []
    for stack, in_store, node in zip(track.tolist(), known.tolist(), parent.tolist(), strict=True):
        first = int(starts[stack])
        for at in range(first + position, first + int(lengths[stack])):
            key = int(key_ids[at])
            child = store.child(node, key) if in_store else -1
            if child < 0:
                in_store = False
                child = new.get((node, key), -1)
                if child < 0:
                    child = new[(node, key)] = made.next + len(rows)
                    rows.append((node, key, int(flags[at]), at - first + 1))
            positions.append(at)
            found.append(child)
            node = child
    nodes[positions] = found
    if rows:
        parents, keys, row_flags, depths = zip(*rows, strict=True)
        made.make(
            np.array(parents, np.int32), np.array(keys, np.int32),
            np.array(row_flags, np.uint8), np.array(depths, np.int16),
        )  # fmt: skip


def _chains(
    key_ids: Ids, flags: Flags, firsts: Counts, depths: Counts, lengths: Counts,
    nodes: Ids, made: _NewRows,
) -> None:  # fmt: skip
    """New nodes for runs of ``lengths`` positions from ``firsts`` (at
    ``depths``), each run a chain under the node of the position before it."""
    if not len(lengths):
        return
    total = int(lengths.sum())
    run_starts = np.cumsum(lengths) - lengths
    offsets = np.arange(total, dtype=np.int64) - np.repeat(run_starts, lengths)
    positions = np.repeat(firsts, lengths) + offsets
    ids = np.arange(made.next, made.next + total, dtype=np.int32)
    parents = ids - 1
    parents[run_starts] = nodes[firsts - 1]
    depth = (np.repeat(depths, lengths) + offsets).astype(np.int16)
    made.make(parents, key_ids[positions], flags[positions], depth)
    nodes[positions] = ids


def mark_firsts(key_ids: Ids, flags: Flags, starts: Counts, lengths: Counts) -> Ids:
    """Set ``FIRST_OF_FUNCTION`` and ``FIRST_OF_SYMBOL`` in the ``flags`` of
    stacks laid one after another (a process, then its frames); returns each
    stack's *symbol*: the function its leaf's samples count for in the table
    grouped by symbol (its nearest frame at or above it not inlined, or its
    first frame), -1 for a stack of no frames. See ``symbol_owners``."""
    is_frame = np.ones(len(key_ids), np.bool_)
    is_frame[starts] = False  # the process node
    in_stack = np.repeat(np.arange(len(starts), dtype=np.int64), lengths)
    symbol = is_frame & ((flags & INLINED) == 0)
    framed = lengths > 1
    symbol[starts[framed] + 1] = True
    # The first of each (stack, key): outermost. One stable sort of the frames
    # by (stack, key) groups them, each group outermost first; the symbols in
    # that order are grouped the same way.
    at = np.flatnonzero(is_frame)
    slots = slots_of(in_stack[at], key_ids[at])
    order = np.argsort(slots, kind="stable")
    for flag, ordered in ((FIRST_OF_FUNCTION, order), (FIRST_OF_SYMBOL, order[symbol[at[order]]])):
        grouped = slots[ordered]
        first = np.ones(len(ordered), np.bool_)
        first[1:] = grouped[1:] != grouped[:-1]
        flags[at[ordered[first]]] |= flag
    latest = np.maximum.accumulate(np.where(symbol, np.arange(len(key_ids)), 0))
    return np.where(framed, key_ids[latest[starts + lengths - 1]], -1).astype(np.int32)


def symbol_owners(parent: Ids, depth: npt.NDArray[np.int16], flags: Flags) -> Ids:
    """Per node, the node of the symbol its samples count for: itself, unless
    it is an inline frame below another frame; then its nearest node above
    that is not inlined (or the first frame under its process)."""
    owner = np.arange(len(parent), dtype=np.int32)
    inner = np.flatnonzero(((flags & INLINED) != 0) & (depth >= 3))
    for _ in range(int(depth.max(initial=0))):  # one pass per level of nesting
        above = owner[parent[inner]]
        if np.array_equal(above, owner[inner]):
            break
        owner[inner] = above
    return owner


def add_up(
    store: TreeStore, leaves: Ids, counts: Counts, total: Counts, fn_total: Counts,
    symbol_total: Counts,
) -> None:  # fmt: skip
    """Add ``counts`` to the ``total`` of every node from ``leaves`` up to the
    root, to ``fn_total`` of the function of each node flagged
    ``FIRST_OF_FUNCTION`` on the way (each function once a stack), and to
    ``symbol_total`` of each node flagged ``FIRST_OF_SYMBOL``.

    The paths of ``ADD_UP_LEAVES`` leaves at a time are gathered level by level
    (one indexing each), then added in three scatter-adds, not three a level: so
    the arrays held are those leaves times their depth, never a whole batch's
    (100,000 pending samples of depth 45 would be ~4.5 M node ids and counts at
    once); and no stack keeps its node ids (4 bytes a frame: ~7 MB at 40,000
    stacks of depth 45)."""
    parent, key_id, flags, depth = store.parent, store.key_id, store.flags, store.depth
    for at in range(0, len(leaves), ADD_UP_LEAVES):
        some, weights = leaves[at : at + ADD_UP_LEAVES], counts[at : at + ADD_UP_LEAVES]
        depths = depth[some]
        path = np.empty((int(depths.max(initial=0)) + 1, len(some)), np.int32)
        path[0] = some
        for level in range(1, len(path)):  # row n: the nodes n levels above the leaves
            path[level] = parent[path[level - 1]]
        on_path = np.arange(len(path))[:, None] <= depths  # up to the root, not past it
        nodes, added = path[on_path], np.broadcast_to(weights, path.shape)[on_path]
        np.add.at(total, nodes, added)
        marks = flags[nodes]
        for flag, table in ((FIRST_OF_FUNCTION, fn_total), (FIRST_OF_SYMBOL, symbol_total)):
            first = (marks & flag) != 0
            np.add.at(table, key_id[nodes[first]], added[first])
