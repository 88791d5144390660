"""The call tree's shape in growable arrays, and immutable snapshots of its counts.

``TreeStore`` owns the shape: one row per node (parent, key id, depth, first child,
next sibling, flags), appended as new stacks arrive, never moved or removed (a node
id is stable for the store's life); counts are each ``Profile``'s, over a store it may share.

``LiveTree`` is one snapshot: copies of the counts as of a freeze, plus the
store's columns (views of those that never change once a row is written; the
one linking column that changes, ``first_child``, read so that children made
since are skipped). Its nodes (``LiveNode``) are made only when a view asks for
them, children sorted hottest first on first access, so a freeze costs two
array copies instead of a walk over the tree. No Textual here.
"""

from __future__ import annotations

from array import array
from typing import Final

import numpy as np
import numpy.typing as npt

from bpftop.tui.model.child_index import ChildIndex
from bpftop.tui.model.snapshot import CallNode

NodeKey = tuple[str, str, bool]
"""(label, module, kernel): identity of a node among its siblings and of a function."""

Ids = npt.NDArray[np.int32]
Counts = npt.NDArray[np.int64]
Depths = npt.NDArray[np.int16]

ROOT = 0
SMALL = 16
"""Up to this many children, a snapshot reads their counts one by one."""
INLINED = 1
UNRESOLVED = 2
FIRST_OF_FUNCTION = 4
"""Set on a frame node whose function is not on the path above it (totals count it once)."""
FIRST_OF_SYMBOL = 8
"""Set on a symbol's node (a frame not inlined, or an inline one right under its
process) whose function is no symbol node above it: the table by symbol counts it."""


class TreeStore:
    """The nodes of a call tree: root (depth 0), processes (1), frames (2 and below).

    ``find`` looks up the children of a batch of nodes at once, ``append``
    adds rows (:mod:`bpftop.tui.model.placement` decides which): the columns
    are numpy arrays written once per row, and a node's child is found through
    a hash index (:mod:`bpftop.tui.model.child_index`).
    """

    def __init__(self, root_label: str = "all") -> None:
        self.size = 1
        self.keys: list[NodeKey] = [(root_label, "", False)]
        self.key_ids: dict[NodeKey, int] = {self.keys[0]: 0}  # only ever added to
        self._index = ChildIndex()
        self.sources: dict[int, str] = {}  # node -> "file.c:123"; only ever added to
        self.start_lines: dict[NodeKey, int] = {}  # a Python function's first line, by key
        self._capacity = 1024
        self._parent: Ids = np.zeros(self._capacity, np.int32)
        self._key_id: Ids = np.zeros(self._capacity, np.int32)
        self._depth: npt.NDArray[np.int16] = np.zeros(self._capacity, np.int16)
        self._first_child: Ids = np.full(self._capacity, -1, np.int32)
        # A Python array, not numpy: walked one item at a time (a wide node has
        # thousands of children), where numpy's scalar indexing is 4x slower.
        self._next_sibling = array("i", [-1])
        self._flags: npt.NDArray[np.uint8] = np.zeros(self._capacity, np.uint8)

    @property
    def capacity(self) -> int:  # rows the columns have room for (>= size)
        return self._capacity

    def key_of(self, key: NodeKey) -> int:
        """The id of ``key``, interned on first sight."""
        found = self.key_ids.get(key)
        if found is None:
            found = self.key_ids[key] = len(self.keys)
            self.keys.append(key)
        return found

    def find(self, parents: Ids, key_ids: Ids) -> Ids:
        """The child of each ``parents[i]`` with ``key_ids[i]``, -1 where none is.

        An only child is read through ``first_child``; the hash index holds
        just the nodes that have siblings: of the 1.7 M nodes of 40,000 random
        stacks of depth ~45 most are only children (bench.model_scale)."""
        first = self._first_child[parents]
        following = np.frombuffer(self._next_sibling, np.int32)[first]  # first = -1: masked
        only = (first >= 0) & (following < 0)
        found = np.where(only & (self._key_id[first] == key_ids), first, -1).astype(np.int32)
        several = np.flatnonzero((first >= 0) & ~only)
        if len(several):
            found[several] = self._index.find(
                parents[several], key_ids[several], self._parent, self._key_id
            )
        return found

    def child(self, parent: int, key_id: int) -> int:
        """``find`` for one pair: ``parent``'s child with ``key_id``, or -1."""
        first = int(self._first_child[parent])
        if first >= 0 and self._next_sibling[first] >= 0:  # several children: indexed
            return self._index.find_one(parent, key_id, self._parent, self._key_id)
        return first if first >= 0 and self._key_id[first] == key_id else -1

    def append(
        self, parents: Ids, key_ids: Ids, flags: npt.NDArray[np.uint8], depths: Depths
    ) -> None:
        """New rows after the last, numbered from ``size`` in order, linked under
        their parents and indexed. A parent may be one of the new rows; no
        (parent, key) pair may be in the store or twice among the rows."""
        start, end = self.size, self.size + len(parents)
        if end > self._capacity:
            while end > self._capacity:
                self._capacity *= 2
            self._grow(self._capacity)
        self._parent[start:end] = parents
        self._key_id[start:end] = key_ids
        self._flags[start:end] = flags
        self._depth[start:end] = depths
        indexed = self._link(parents, start)
        self.size = end
        self._index.add(indexed, self._parent, self._key_id)

    def _link(self, parents: Ids, start: int) -> Ids:
        """Link new nodes under their parents; returns the nodes that now have
        siblings and are not in the index yet (an only child until now included)."""
        # Each new node goes first among its parent's children, as if linked one
        # by one: its next sibling is the node made before it under the same
        # parent, or the parent's first child before this batch.
        order = np.argsort(parents, kind="stable")
        grouped, nodes = parents[order], order.astype(np.int32) + start
        first = np.ones(len(order), np.bool_)
        first[1:] = grouped[1:] != grouped[:-1]
        prior = self._first_child[grouped[first]]  # per parent: its first child before, or -1
        was_alone = prior[(prior >= 0) & (np.frombuffer(self._next_sibling, np.int32)[prior] < 0)]
        following = np.empty(len(order), np.int32)
        following[1:] = nodes[:-1]
        following[first] = prior
        last = np.ones(len(order), np.bool_)
        last[:-1] = first[1:]
        linked = np.empty(len(order), np.int32)
        linked[order] = following
        # Siblings before first children: a snapshot on another thread may walk
        # from a new first child at any moment (see LiveTree.children_of).
        self._next_sibling.frombytes(linked.tobytes())
        self._first_child[grouped[last]] = nodes[last]
        # A parent with two children or more: all of them indexed.
        group_of = np.cumsum(first) - 1
        sizes = np.diff(np.append(np.flatnonzero(first), len(order)))
        shared = (sizes >= 2) | (prior >= 0)
        return np.concatenate([was_alone, nodes[shared[group_of]]]).astype(np.int32)

    def _grow(self, capacity: int) -> None:
        # New arrays: snapshots keep views of the old ones, which stay as they were.
        for name in ("_parent", "_key_id", "_depth", "_flags"):
            old = getattr(self, name)
            grown = np.zeros(capacity, old.dtype)
            grown[: len(old)] = old
            setattr(self, name, grown)
        first_child = np.full(capacity, -1, np.int32)
        first_child[: len(self._first_child)] = self._first_child
        self._first_child = first_child

    @property
    def parent(self) -> Ids:
        return self._parent

    @property
    def key_id(self) -> Ids:
        return self._key_id

    @property
    def depth(self) -> npt.NDArray[np.int16]:
        return self._depth

    @property
    def flags(self) -> npt.NDArray[np.uint8]:
        return self._flags

    @property
    def first_child(self) -> Ids:
        return self._first_child

    @property
    def next_sibling(self) -> array[int]:
        return self._next_sibling

    def levels(self) -> list[Ids]:  # node ids by depth (index = depth)
        return depth_levels(self.depth[: self.size])


class LiveTree:
    """The counts of a store's nodes as of one freeze; nodes made on demand.

    ``freeze`` copies the counts and shares the store's columns; ``with_counts``
    makes a derived tree of the same shape with other counts (a filter's),
    sharing everything else.
    """

    def __init__(self, shape: Shape, self_count: Counts, total: Counts) -> None:
        self._shape = shape
        self.size: Final = shape.size
        self.self_count: Final = self_count
        self.total: Final = total
        self.first_child: Final = shape.first_child
        self.next_sibling: Final = shape.next_sibling
        self.parent: Final = shape.parent
        self.depth: Final = shape.depth
        self.key_id: Final = shape.key_id
        self.flags: Final = shape.flags
        self.keys: Final = shape.keys  # append-only
        self.key_ids: Final = shape.key_ids  # append-only
        self.sources: Final = shape.sources  # append-only (file:line found later)
        self.start_lines: Final = shape.start_lines  # append-only
        self.has_kids: npt.NDArray[np.bool_] | None = None
        """Per node, whether it has children, where its own count does not say
        (a callers tree: own is the function's leaf samples, not where paths end)."""

    @classmethod
    def freeze(cls, store: TreeStore, self_counts: Counts, totals: Counts) -> LiveTree:
        """The store's tree with these counts (from node 0), which must not
        change after: copies (``count_copies``), or a record's final counts."""
        size = store.size
        return cls(Shape.of_store(store, size), self_counts[:size], totals[:size])

    def with_counts(self, self_count: Counts, total: Counts) -> LiveTree:
        """The same shape with other counts."""
        return LiveTree(self._shape, self_count, total)

    def levels(self) -> list[Ids]:  # node ids by depth (index = depth)
        return self._shape.levels()

    def root(self) -> LiveNode:
        index = ROOT
        key = self.keys[int(self.key_id[index])]
        self_count, total = int(self.self_count[index]), int(self.total[index])
        return LiveNode(self, index, key, self_count, total, "", int(self.flags[index]))

    def children_of(self, index: int, min_total: int = 1) -> tuple[CallNode, ...]:
        """Children with at least ``min_total`` samples, hottest first, ties by key."""
        ids = []
        child = int(self.first_child[index]) if index < self.size else -1
        next_sibling, size = self.next_sibling, self.size
        while child >= size:  # made after this snapshot: new children come first
            child = next_sibling[child]
        while child >= 0:
            ids.append(child)
            child = next_sibling[child]
        if not ids:
            return ()
        keys, sources = self.keys, self.sources
        if len(ids) <= SMALL:  # item by item beats numpy's per-call overhead here
            total, key_id, own, flags = self.total, self.key_id, self.self_count, self.flags
            ranked = sorted(
                (-total.item(c), keys[key_id.item(c)], c, own.item(c), flags.item(c))
                for c in ids
                if total.item(c) >= min_total
            )
        else:
            at = np.array(ids)
            at = at[self.total[at] >= min_total]  # before any per-child Python work
            ranked = sorted(
                zip(
                    (-self.total[at]).tolist(),
                    [keys[key] for key in self.key_id[at].tolist()],
                    at.tolist(),
                    self.self_count[at].tolist(),
                    self.flags[at].tolist(),
                    strict=True,
                )
            )
        return tuple(
            LiveNode(self, node, key, own, -negative, sources.get(node, ""), flags)
            for negative, key, node, own, flags in ranked
        )


class Shape:
    """A tree's shape as arrays: what a snapshot shares with its store, or what
    a derived view (frames dropped) made. Node 0 is the root; ``sources`` maps
    nodes to "file.c:123"."""

    def __init__(
        self,
        *,
        parent: Ids,
        depth: npt.NDArray[np.int16],
        key_id: Ids,
        flags: npt.NDArray[np.uint8],
        first_child: Ids,
        next_sibling: array[int],
        keys: list[NodeKey],
        key_ids: dict[NodeKey, int],
        sources: dict[int, str],
        start_lines: dict[NodeKey, int] | None = None,
    ) -> None:
        self.size = len(parent)
        self.parent, self.depth, self.key_id, self.flags = parent, depth, key_id, flags
        self.first_child, self.next_sibling = first_child, next_sibling
        self.keys, self.key_ids, self.sources = keys, key_ids, sources
        self.start_lines = start_lines if start_lines is not None else {}
        self._levels: list[Ids] | None = None

    @classmethod
    def of_store(cls, store: TreeStore, size: int) -> Shape:
        """The store's first ``size`` nodes, all columns shared: those written
        once per row as views; ``first_child`` as the store's own array (nodes
        gain children later, but a new child goes first and has an id of
        ``size`` or more, so a walk skips the ones made since: no copy of
        6.8 MB per freeze at 1.7 M nodes)."""
        return cls(
            parent=store.parent[:size],
            depth=store.depth[:size],
            key_id=store.key_id[:size],
            flags=store.flags[:size],
            first_child=store.first_child,  # read below size only
            next_sibling=store.next_sibling,  # append-only: items below size never change
            keys=store.keys,
            key_ids=store.key_ids,
            sources=store.sources,
            start_lines=store.start_lines,
        )

    def levels(self) -> list[Ids]:
        if self._levels is None:
            self._levels = depth_levels(self.depth)
        return self._levels


def link_children(parent: Ids) -> tuple[Ids, array[int]]:
    """(first_child, next_sibling) for nodes given only their parents (node 0: root)."""
    size = len(parent)
    first_child = np.full(size, -1, np.int32)
    next_sibling = np.full(size, -1, np.int32)
    order = np.argsort(parent[1:], kind="stable").astype(np.int32) + 1
    ordered_parents = parent[order]
    same = ordered_parents[1:] == ordered_parents[:-1]
    next_sibling[order[:-1][same]] = order[1:][same]
    starts = np.ones(len(order), np.bool_)
    starts[1:] = ~same
    first_child[ordered_parents[starts]] = order[starts]
    return first_child, array("i", next_sibling.tobytes())


def depth_levels(depth: npt.NDArray[np.int16]) -> list[Ids]:
    """Node ids grouped by depth (index = depth)."""
    order = np.argsort(depth, kind="stable").astype(np.int32)
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2))
    return [order[bounds[d] : bounds[d + 1]] for d in range(len(bounds) - 1)]


class LiveNode(CallNode):
    """A snapshot's node: fields fixed at creation, children made on first access."""

    __slots__ = ("_index", "_kids", "_tree")

    def __init__(
        self,
        tree: LiveTree,
        index: int,
        key: NodeKey,
        self_count: int,
        total_count: int,
        source: str,
        flags: int,
    ) -> None:
        label, module, kernel = key
        super().__init__(
            label, module, kernel, self_count, total_count, (), source,
            bool(flags & INLINED), bool(flags & UNRESOLVED),
        )  # fmt: skip
        self._tree = tree
        self._index = index
        self._kids: tuple[CallNode, ...] | None = None

    @property
    def live_tree(self) -> LiveTree:
        return self._tree

    @property
    def index(self) -> int:
        return self._index

    @property
    def children(self) -> tuple[CallNode, ...]:
        kids = self._kids
        if kids is None:  # two threads may both make them: equal results, either kept
            kids = self._kids = self._tree.children_of(self._index)
        return kids

    @property
    def has_children(self) -> bool:
        if self._kids is not None:
            return bool(self._kids)
        has_kids = self._tree.has_kids
        if has_kids is not None:
            return bool(has_kids[self._index])
        return self.total_count > self.self_count  # the rest is its children's

    def children_with(self, min_total: int) -> tuple[CallNode, ...]:
        """Without making the narrower children (the flame graph skips them)."""
        if self._kids is not None or min_total <= 1:
            return super().children_with(min_total)
        return self._tree.children_of(self._index, min_total)
