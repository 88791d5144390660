"""Derived views of a live snapshot computed on its arrays, not by walking nodes.

A filter, the per-function table of a derived tree and the callers of a
function each need every node of the profile; made node by node from a
``LiveTree`` that costs seconds at 750,000 nodes. Here they are a few
passes over the snapshot's arrays, level by level (every node's parent is
one level up). A ``Match`` is asked once per distinct key, never per node:
matches look only at a node's key (label, module, kernel).
No Textual here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from bpftop.tui.model.path_tree import merge_paths, merged_root, tree_from_parents
from bpftop.tui.model.snapshot import CallNode, HotFunction
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

Match = Callable[[CallNode], bool]
Mask = npt.NDArray[np.bool_]
Order = npt.NDArray[np.intp]


def key_mask(live: LiveTree, match: Match) -> Mask:
    """Per node: does its key match (the root never does)."""
    matched = np.fromiter((match(CallNode(*key)) for key in live.keys), np.bool_, len(live.keys))
    mask = matched[live.key_id]
    mask[ROOT] = False
    return mask


def leads_to_match(live: LiveTree, match: Match) -> Mask:
    """Per node: does it or anything below it match (what a search must visit)."""
    found = key_mask(live, match)
    parent = live.parent
    for level in reversed(live.levels()[1:]):
        found[parent[level[found[level]]]] = True
    return found


def filtered(live: LiveTree, match: Match) -> LiveNode | None:
    """``views.filter_tree`` on arrays: only the stacks with a matching frame.

    A matching node keeps its whole subtree; above it, nodes keep only the
    samples that reach a match (and no self samples).
    """
    inside = key_mask(live, match)
    levels = live.levels()
    parent = live.parent
    for level in levels[1:]:  # top-down: under a match is inside too
        inside[level] |= inside[parent[level]]
    if not inside.any():
        return None
    total = np.where(inside, live.total, 0)
    for level in reversed(levels[1:]):  # bottom-up: outside nodes sum what reaches a match
        outside_parent = ~inside[parent[level]]
        np.add.at(total, parent[level][outside_parent], total[level][outside_parent])
    return live.with_counts(np.where(inside, live.self_count, 0), total).root()


def hot_of(live: LiveTree, limit: int | None = None) -> tuple[HotFunction, ...]:
    """``views.hot_from_tree`` on arrays: self from every frame node, total from
    each function's outermost node on a path (a sample counted once)."""
    keys = len(live.keys)
    sources: dict[int, str] = {}
    for node, source in list(live.sources.items()):
        if node < live.size:
            sources.setdefault(int(live.key_id[node]), source)
    frames = live.depth >= 2
    own = np.bincount(live.key_id[frames], live.self_count[frames], keys).astype(np.int64)
    first = frames & ((live.flags & FIRST_OF_FUNCTION) != 0)
    total = np.bincount(live.key_id[first], live.total[first], keys).astype(np.int64)
    rows = []
    for key in np.flatnonzero(total > 0).tolist():
        label, module, kernel = live.keys[key]
        rows.append(
            HotFunction(label, module, kernel, int(own[key]), int(total[key]), sources.get(key, ""))
        )
    rows.sort(key=lambda f: (-f.self_count, -f.total_count, f.label, f.module, f.kernel))
    return tuple(rows if limit is None else rows[:limit])


def callers(live: LiveTree, key: NodeKey) -> LiveNode:
    """``views.callers_tree`` on arrays: root -> the function -> its callers -> ...

    Each outermost occurrence of the function adds its samples along its path
    upwards; paths are merged where their callers are the same. The result is
    a ``LiveTree`` too (a function called from 10,000 paths has 10,000 caller
    nodes, and the view makes a screenful).
    """
    key_id = live.key_ids.get(key, -1)
    occurrences = np.flatnonzero(
        (live.key_id == key_id) & ((live.flags & FIRST_OF_FUNCTION) != 0) & (live.total > 0)
    )
    levels = _caller_levels(live, live.parent[occurrences], live.total[occurrences])
    return _callers_tree(live, key, levels)


class CallerLevel(NamedTuple):
    """One level of callers: for each, its callee's index one level down (the
    function's at the first level), its key, its samples and one node it merges."""

    below: Counts
    key_id: Counts
    samples: Counts
    origin: Ids


def _caller_levels(live: LiveTree, nodes: Ids, weights: Counts) -> list[CallerLevel]:
    """Callers level by level, from the occurrences' parents up to the processes.

    At each level a path's caller node is identified by (its node one level
    below, the caller's key): paths with the same callers so far merge.
    """
    levels: list[CallerLevel] = []
    group = np.zeros(len(nodes), np.int64)  # 0: the function itself
    keep = nodes != ROOT
    nodes, weights, group = nodes[keep], weights[keep], group[keep]
    width = max(1, len(live.keys))
    while len(nodes):
        pairs = group * width + live.key_id[nodes]  # (node below, caller's key) as one number
        unique, first, inverse = np.unique(pairs, return_index=True, return_inverse=True)
        samples = np.bincount(inverse, weights, len(unique)).astype(np.int64)
        levels.append(CallerLevel(unique // width, unique % width, samples, nodes[first]))
        up = live.parent[nodes]
        keep = up != ROOT  # a process is the last caller of a path
        nodes, weights, group = up[keep], weights[keep], inverse[keep]
    return levels


CALLERS_ROOT: NodeKey = ("callers", "", False)
_EMPTY = np.zeros(0, np.int64)
_NO_LEVEL = CallerLevel(_EMPTY, _EMPTY, _EMPTY, np.zeros(0, np.int32))


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
    return tree_from_parents(
        _joined(parent).astype(np.int32),
        np.repeat(np.arange(len(sizes) + 2, dtype=np.int16), [1, 1, *sizes]),
        _joined([np.array(ends, np.int64), key_id]).astype(np.int32),
        _joined([np.zeros(2, np.uint8), live.flags[origin] & (INLINED | UNRESOLVED)]),
        total - _joined(passed), total, keys, key_ids, _sources_of(live, origin, 2),
    ).root()  # fmt: skip


def _joined(parts: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    return np.concatenate(parts) if parts else _EMPTY


def _sources_of(live: LiveTree, origin: npt.NDArray[Any], first: int) -> dict[int, str]:
    """The file:line of nodes made from ``origin`` (node ``first + i`` from ``origin[i]``)."""
    if not live.sources:  # only while file:line is shown
        return {}
    sourced = np.flatnonzero(np.isin(origin, np.fromiter(live.sources, np.int64)))
    return {first + n: live.sources[int(origin[n])] for n in sourced.tolist()}


def kept_frames(live: LiveTree, keep: Match) -> LiveNode:
    """``views.keep_frames`` on arrays: the frames ``keep`` rejects dropped.

    Every node with self samples stands for one stack: its path from the root.
    Paths lose the rejected frames (processes always stay) and are merged
    again (``path_tree``): equal paths merge. Totals stay; a dropped frame's
    self samples go to the frame above it. Whether a frame is its function's
    outermost on the path does not change (all frames of a function are kept,
    or all dropped).
    """
    stacks = np.flatnonzero(live.self_count > 0)
    cells = _paths(live, stacks)  # node ids, root first, -1 past the end
    kept = cells >= 0
    kept[:, 2:] &= key_mask(live, keep)[np.maximum(cells[:, 2:], 0)]
    left = np.argsort(~kept, axis=1, kind="stable")  # kept cells first, in order
    cells = np.where(np.take_along_axis(kept, left, 1), np.take_along_axis(cells, left, 1), -1)
    paths = np.where(cells >= 0, live.key_id[np.maximum(cells, 0)], -1)
    merged = merge_paths(paths, live.self_count[stacks])
    origin = cells[merged.row, merged.column]
    sources = _sources_of(live, origin, 0)
    return merged_root(merged, live.flags[origin], live.keys, live.key_ids, sources)


def _paths(live: LiveTree, nodes: Counts) -> npt.NDArray[np.int64]:
    """Row per node: its ancestors root first, then itself, then -1s."""
    depth = live.depth[nodes].astype(np.int64)
    cells = np.full((len(nodes), int(depth.max(initial=0)) + 1), -1, np.int64)
    rows = np.arange(len(nodes))
    current = nodes.astype(np.int64)
    while len(rows):
        cells[rows, depth] = current
        more = depth > 0
        rows, current, depth = (
            rows[more],
            live.parent[current[more]].astype(np.int64),
            depth[more] - 1,
        )
    return cells


def hottest_occurrence(live: LiveTree, key: NodeKey, top: int = ROOT) -> tuple[NodeKey, ...] | None:
    """``views.hottest_path_of`` on arrays: the path (below node ``top``) of the
    node of ``key`` under ``top`` with the most samples; of equal ones, the first
    in display order (children hottest first, then by key; an ancestor before
    its descendants)."""
    key_id = live.key_ids.get(key, -1)
    candidates = np.flatnonzero((live.key_id == key_id) & (live.total > 0))
    candidates = candidates[_descends(live, candidates, top)]
    if not len(candidates):
        return None
    best = live.total[candidates].max()
    ranked = []
    for node in candidates[live.total[candidates] == best].tolist():
        order = []
        while node != top:
            order.append((-int(live.total[node]), live.keys[int(live.key_id[node])]))
            node = int(live.parent[node])
        ranked.append(order[::-1])
    return tuple(k for _, k in min(ranked))


def _descends(live: LiveTree, nodes: Counts, top: int) -> Mask:
    """Per node of ``nodes``: is it below node ``top``. Each is lifted to
    ``top``'s depth, one level per pass."""
    below: Mask = nodes != top
    if top == ROOT:
        return below
    depth = live.depth[top]
    up = nodes.copy()
    deeper: Mask = live.depth[up] > depth
    below &= deeper
    while deeper.any():
        up[deeper] = live.parent[up[deeper]]
        deeper = live.depth[up] > depth
    below &= up == top
    return below
