"""Derived views of a call tree: what the views show instead of the snapshot's own.

One implementation of each, on the tree's arrays (a ``LiveTree``):
``filter_tree`` keeps the stacks with a matching frame, ``keep_frames``
drops frames (keeps user, kernel or Python frames only), ``rename_frames``
regroups them (Python frames by function), ``hot_from_tree`` is the function
table of a derived tree (inline frames as rows; ``hot_by_symbol`` groups
them into the function they were inlined into, as perf top does),
``hottest_path_of`` finds where a function is hottest, and
``leads_to_match`` tells a search which subtrees to visit.
The callers of a function are in ``callers_tree``; paths and search in
``node_paths``. ``sort_hot`` and ``trend`` order and mark the function
table's rows.

Each takes any ``CallNode`` tree. A live snapshot's root (what the
collector, the importers and these views all make) is used as it is;
another tree is copied into arrays first (``array_tree.array_tree``). Made
node by node, a view of 750,000 nodes costs seconds; here it is a few
passes over the arrays, level by level (every node's parent is one level
up). A ``Match`` is asked once per distinct key, never per node: matches
look only at a node's key (label, module, kernel). The tests keep
node-by-node walks of the same views as their oracle. No Textual here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from bpftop.tui.model.array_tree import (
    ancestors,
    array_tree,
    first_of_function,
    merge_paths,
    merged_root,
    sources_from,
)
from bpftop.tui.model.placement import symbol_owners
from bpftop.tui.model.snapshot import CallNode, HotFunction
from bpftop.tui.model.store import (
    FIRST_OF_FUNCTION,
    INLINED,
    ROOT,
    Counts,
    LiveNode,
    LiveTree,
    NodeKey,
)

NodePath = tuple[NodeKey, ...]
"""The sibling keys from a tree's top down to one of its nodes."""
Match = Callable[[CallNode], bool]
"""A search or a frame filter: asked about a node's key only."""
Mask = npt.NDArray[np.bool_]

HOT_COLUMNS = ("self", "total", "samples", "function", "module")


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


def filter_tree(tree: CallNode, match: Match) -> LiveNode | None:
    """Only the stacks with at least one frame that matches (the root never
    does); None when there are none.

    A matching node keeps its whole subtree; above it, nodes keep only the
    samples that reach a match (and no self samples).
    """
    live = array_tree(tree)
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


def keep_frames(tree: CallNode, keep: Match) -> LiveNode:
    """The frames ``keep`` rejects dropped (below the process rows), what was
    under them merged into their parents.

    Every node with self samples stands for one stack: its path from the root.
    Paths lose the rejected frames (processes always stay) and are merged
    again (``array_tree``): equal paths merge. Totals stay; a dropped frame's
    self samples go to the frame above it. Whether a frame is its function's
    outermost on the path does not change (all frames of a function are kept,
    or all dropped).
    """
    live = array_tree(tree)
    stacks = np.flatnonzero(live.self_count > 0)
    if not len(stacks):
        return _empty(tree)
    cells = ancestors(live, stacks)  # node ids, root first, -1 past the end
    kept = cells >= 0
    kept[:, 2:] &= key_mask(live, keep)[np.maximum(cells[:, 2:], 0)]
    left = np.argsort(~kept, axis=1, kind="stable")  # kept cells first, in order
    cells = np.where(np.take_along_axis(kept, left, 1), np.take_along_axis(cells, left, 1), -1)
    paths = np.where(cells >= 0, live.key_id[np.maximum(cells, 0)], -1)
    merged = merge_paths(paths, live.self_count[stacks])
    origin = cells[merged.row, merged.column]
    sources = sources_from(live, origin, 0)
    return merged_root(
        merged, live.flags[origin], live.keys, live.key_ids, sources, live.start_lines
    )


def rename_frames(tree: CallNode, rename: Callable[[NodeKey], NodeKey]) -> LiveNode:
    """Every frame's key replaced by ``rename(key)`` (Python frames by function
    instead of by line), paths that became equal merged. Totals stay; a
    function that is now twice on a path is counted once in totals."""
    live = array_tree(tree)
    renamed: dict[NodeKey, int] = {}
    new_ids = np.fromiter(
        (renamed.setdefault(rename(key), len(renamed)) for key in live.keys),
        np.int32,
        len(live.keys),
    )
    stacks = np.flatnonzero(live.self_count > 0)
    if not len(stacks):
        return _empty(tree)
    cells = ancestors(live, stacks)
    paths = np.where(cells >= 0, new_ids[live.key_id[np.maximum(cells, 0)]], -1).astype(np.int32)
    merged = merge_paths(paths, live.self_count[stacks])
    origin = cells[merged.row, merged.column]
    flags = live.flags[origin] & ~np.uint8(FIRST_OF_FUNCTION) | first_of_function(paths, merged, 2)
    return merged_root(merged, flags, list(renamed), renamed, sources_from(live, origin, 0))


def _empty(tree: CallNode) -> LiveNode:
    """A tree without samples (a probe that has not fired yet): its root alone."""
    return array_tree(CallNode(tree.label)).root()


def hot_from_tree(tree: CallNode, limit: int | None = None) -> tuple[HotFunction, ...]:
    """The function table of a (derived) tree: self from every frame node,
    total from each function's outermost node on a path (a sample counted once).
    Inline frames are rows of their own (see ``hot_by_symbol`` for perf's grouping)."""
    live = array_tree(tree)
    keys = len(live.keys)
    frames = live.depth >= 2
    own = np.bincount(live.key_id[frames], live.self_count[frames], keys).astype(np.int64)
    first = frames & ((live.flags & FIRST_OF_FUNCTION) != 0)
    total = np.bincount(live.key_id[first], live.total[first], keys).astype(np.int64)
    return _hot_rows(live, own, total, limit)


def has_inlined(tree: CallNode) -> bool:
    """Whether any frame of the tree is an inline frame (else both groupings agree)."""
    live = array_tree(tree)
    return bool((live.flags & INLINED).any())


def hot_by_symbol(tree: CallNode, limit: int | None = None) -> tuple[HotFunction, ...]:
    """The function table grouped as ``perf top`` groups it: by the symbol the
    code belongs to. An inline frame's samples count for the function it was
    inlined into (its nearest frame above that is not inlined), and inline
    frames get no rows of their own; an inline frame with no such frame above
    it (right under its process) stands for itself."""
    live = array_tree(tree)
    keys = len(live.keys)
    inlined = (live.flags & INLINED) != 0
    owner = symbol_owners(live.parent, live.depth, live.flags)
    frames = live.depth >= 2
    own = np.bincount(live.key_id[owner[frames]], live.self_count[frames], keys).astype(np.int64)
    symbol = frames & (owner == np.arange(live.size))
    first = symbol & ((live.flags & FIRST_OF_FUNCTION) != 0)
    first |= _outermost_symbols(live, symbol & ~first, symbol, inlined)
    total = np.bincount(live.key_id[first], live.total[first], keys).astype(np.int64)
    return _hot_rows(live, own, total, limit)


def _outermost_symbols(live: LiveTree, candidates: Mask, symbol: Mask, inlined: Mask) -> Mask:
    """Of ``candidates`` (symbol nodes whose function is above them too), those
    whose function is above them in no ``symbol`` node, only as inline frames
    in others: they count its total.
    Only functions that are somewhere inline are walked (rare)."""
    found = np.zeros(live.size, np.bool_)
    if not candidates.any():
        return found
    inline_keys = np.unique(live.key_id[inlined])
    candidates = candidates & np.isin(live.key_id, inline_keys)
    parent, key_id = live.parent, live.key_id
    for node in np.flatnonzero(candidates).tolist():
        key, up = key_id[node], int(parent[node])
        while up != ROOT and not (key_id[up] == key and symbol[up]):
            up = int(parent[up])
        found[node] = up == ROOT
    return found


def _hot_rows(
    live: LiveTree, own: Counts, total: Counts, limit: int | None
) -> tuple[HotFunction, ...]:
    """Rows for the keys with a total, hottest self first (then total, then name)."""
    sources: dict[int, str] = {}
    for node, source in list(live.sources.items()):
        if node < live.size:
            sources.setdefault(int(live.key_id[node]), source)
    keys = np.flatnonzero(total > 0)
    if limit is not None and limit < len(keys):  # numpy ranks; Python sorts the few kept
        order = np.lexsort((-total[keys], -own[keys]))
        last = order[limit - 1]
        tied = (own[keys][order] == own[keys][last]) & (total[keys][order] == total[keys][last])
        keys = keys[order[: max(limit, int(np.flatnonzero(tied)[-1]) + 1)]]
    rows = []
    for key in keys.tolist():
        label, module, kernel = live.keys[key]
        rows.append(
            HotFunction(label, module, kernel, int(own[key]), int(total[key]), sources.get(key, ""))
        )
    rows.sort(key=lambda f: (-f.self_count, -f.total_count, f.label, f.module, f.kernel))
    return tuple(rows if limit is None else rows[:limit])


def hottest_path_of(node: CallNode, key: NodeKey) -> NodePath | None:
    """The path below ``node`` of its descendant of ``key`` with the most
    samples; of equal ones, the first in display order (children hottest
    first, then by key; an ancestor before its descendants). Below a live
    node (a zoom into a snapshot) the snapshot's arrays are searched as they are."""
    if isinstance(node, LiveNode):
        live, top = node.live_tree, node.index
    else:
        live, top = array_tree(node), ROOT
    key_id = live.key_ids.get(key, -1)
    candidates = np.flatnonzero((live.key_id == key_id) & (live.total > 0))
    candidates = candidates[_descends(live, candidates, top)]
    if not len(candidates):
        return None
    best = live.total[candidates].max()
    ranked = []
    for found in candidates[live.total[candidates] == best].tolist():
        order = []
        while found != top:
            order.append((-int(live.total[found]), live.keys[int(live.key_id[found])]))
            found = int(live.parent[found])
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


def sort_hot(hot: tuple[HotFunction, ...], column: str, descending: bool) -> list[HotFunction]:
    """Rows ordered by one of ``HOT_COLUMNS``."""
    keys: dict[str, Callable[[HotFunction], tuple[object, ...]]] = {
        "self": lambda f: (f.self_count, f.total_count),
        "total": lambda f: (f.total_count, f.self_count),
        "samples": lambda f: (f.self_count, f.total_count),
        "function": lambda f: (f.label.lower(), f.module),
        "module": lambda f: (f.module.rsplit("/", 1)[-1].lower(), f.label),
    }
    return sorted(hot, key=keys[column], reverse=descending)


TREND_TICKS = 5
"""Trends compare a share with the one this many ticks before (a tick's noise
alone flipped most rows' arrows every tick)."""
TREND_MIN_PP = 0.5
"""A share must move at least this many percentage points to get an arrow ..."""
TREND_RELATIVE = 0.1
"""... and at least this fraction of what it was."""


def trend(before: float | None, now: float) -> str:
    """A marker comparing a share (%) with an earlier one: ▲ hotter, ▼ cooler,
    + new, blank when the change is within ``TREND_MIN_PP`` or ``TREND_RELATIVE``."""
    if before is None:
        return "+"
    threshold = max(TREND_MIN_PP, TREND_RELATIVE * before)
    if now > before + threshold:
        return "▲"
    if now < before - threshold:
        return "▼"
    return " "
