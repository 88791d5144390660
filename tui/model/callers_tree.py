"""The callers of one function: the bottom-up tree the Callers view shows.

``callers_tree`` gives root ("callers") -> the function -> its callers ->
theirs, each caller path weighted by the samples the function spent under
it (its outermost occurrence on a path only, so recursion counts once).
A node's self count is, as in perf report's callers view, the samples in
which the function itself was the leaf (on the paths through that node).
It is computed on the tree's arrays, level by level, and is a ``LiveTree``
itself: the views' array code applies to it (search, hottest path), and a
function called from 10,000 paths makes nodes only for what is shown.
No Textual here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from bpftop.tui.model.array_tree import array_tree, sources_from, tree_from_parents
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.store import (
    FIRST_OF_FUNCTION,
    INLINED,
    ROOT,
    UNRESOLVED,
    Counts,
    Ids,
    LiveNode,
    LiveTree,
    NodeKey,
)

CALLERS_ROOT: NodeKey = ("callers", "", False)


def callers_tree(tree: CallNode, key: NodeKey) -> LiveNode:
    """Root -> the function ``key`` -> its callers -> theirs -> ... -> processes.

    Each outermost occurrence of the function adds its samples along its path
    upwards, and its leaf samples (the function's own, recursive calls within
    it included) as the self count of each node on it; paths are merged where
    their callers are the same.
    """
    live = array_tree(tree)
    key_id = live.key_ids.get(key, -1)
    occurrences = np.flatnonzero(
        (live.key_id == key_id) & ((live.flags & FIRST_OF_FUNCTION) != 0) & (live.total > 0)
    )
    leaf = _leaf_samples(live, key_id, occurrences)
    levels = _caller_levels(live, live.parent[occurrences], live.total[occurrences], leaf)
    return _callers_tree(live, key, levels)


def _leaf_samples(live: LiveTree, key_id: int, occurrences: npt.NDArray[np.intp]) -> Counts:
    """Per outermost occurrence: the samples with the function as their leaf
    below it (its own, and those of recursive calls of it under it)."""
    owners = np.flatnonzero((live.key_id == key_id) & (live.self_count > 0))
    weights = live.self_count[owners]
    up = owners.copy()
    inner = (live.flags[up] & FIRST_OF_FUNCTION) == 0  # a recursive call: find the outermost
    while inner.any():
        up[inner] = live.parent[up[inner]]
        outermost = (live.key_id[up] == key_id) & ((live.flags[up] & FIRST_OF_FUNCTION) != 0)
        inner &= ~outermost & (up != ROOT)
    slot = np.searchsorted(occurrences, up)
    found = (slot < len(occurrences)) & (occurrences[np.minimum(slot, len(occurrences) - 1)] == up)
    return np.bincount(slot[found], weights[found], len(occurrences)).astype(np.int64)


class CallerLevel(NamedTuple):
    """One level of callers: for each, its callee's index one level down (the
    function's at the first level), its key, its samples, the function's leaf
    samples among them and one node it merges."""

    below: Counts
    key_id: Counts
    samples: Counts
    leaf: Counts
    origin: Ids


def _caller_levels(live: LiveTree, nodes: Ids, weights: Counts, leaf: Counts) -> list[CallerLevel]:
    """Callers level by level, from the occurrences' parents up to the processes.

    At each level a path's caller node is identified by (its node one level
    below, the caller's key): paths with the same callers so far merge.
    """
    levels: list[CallerLevel] = []
    group = np.zeros(len(nodes), np.int64)  # 0: the function itself
    keep = nodes != ROOT
    nodes, weights, leaf, group = nodes[keep], weights[keep], leaf[keep], group[keep]
    width = max(1, len(live.keys))
    while len(nodes):
        pairs = group * width + live.key_id[nodes]  # (node below, caller's key) as one number
        unique, first, inverse = np.unique(pairs, return_index=True, return_inverse=True)
        samples = np.bincount(inverse, weights, len(unique)).astype(np.int64)
        own = np.bincount(inverse, leaf, len(unique)).astype(np.int64)
        levels.append(CallerLevel(unique // width, unique % width, samples, own, nodes[first]))
        up = live.parent[nodes]
        keep = up != ROOT  # a process is the last caller of a path
        nodes, weights, leaf, group = up[keep], weights[keep], leaf[keep], inverse[keep]
    return levels


_EMPTY = np.zeros(0, np.int64)
_NO_LEVEL = CallerLevel(_EMPTY, _EMPTY, _EMPTY, _EMPTY, np.zeros(0, np.int32))


def _callers_tree(live: LiveTree, key: NodeKey, levels: list[CallerLevel]) -> LiveNode:
    """The callers as a tree of arrays: node 0 is the root, 1 the function, then
    each level's callers (ids level by level; a caller's parent is its callee).
    Flags carry only INLINED and UNRESOLVED (no table is ranked from this tree)."""
    found = int(levels[0].samples.sum()) if levels else 0
    sizes = [len(level.samples) for level in levels]
    starts = np.cumsum([2, *sizes])  # the first id of each level
    parent, passed = [np.zeros(2, np.int64)], [np.array([found, found], np.int64)]
    for depth, level in enumerate(levels):
        parent.append(level.below + (starts[depth - 1] if depth else 1))
        above = levels[depth + 1] if depth + 1 < len(levels) else _NO_LEVEL
        passed.append(np.bincount(above.below, above.samples, sizes[depth]).astype(np.int64))
    origin = _joined([level.origin for level in levels])
    used, key_id = np.unique(_joined([level.key_id for level in levels]), return_inverse=True)
    keys = [live.keys[k] for k in used.tolist()]
    key_ids = {k: i for i, k in enumerate(keys)}
    ends = [key_ids.setdefault(k, len(key_ids)) for k in (CALLERS_ROOT, key)]
    keys.extend(list(key_ids)[len(keys) :])  # the root's and the function's, if new
    total = _joined([np.array([found, found], np.int64), *(level.samples for level in levels)])
    leaf = int(levels[0].leaf.sum()) if levels else 0
    own = _joined([np.array([0, leaf], np.int64), *(level.leaf for level in levels)])
    callers = tree_from_parents(
        _joined(parent).astype(np.int32),
        np.repeat(np.arange(len(sizes) + 2, dtype=np.int16), [1, 1, *sizes]),
        _joined([np.array(ends, np.int64), key_id]).astype(np.int32),
        _joined([np.zeros(2, np.uint8), live.flags[origin] & (INLINED | UNRESOLVED)]),
        own, total, keys, key_ids, sources_from(live, origin, 2), live.start_lines,
    )  # fmt: skip
    callers.has_kids = _joined(passed) > 0  # own counts do not say where paths end here
    return callers.root()


def _joined(parts: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    return np.concatenate(parts) if parts else _EMPTY
