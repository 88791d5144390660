"""Call trees built as arrays (``LiveTree``): from key paths, from parents, from nodes.

Every row of ``paths`` is one stack: key ids root first (column 0 is the
root, the same in every row; column = depth), padded with -1. Rows are
sorted as byte strings (rows sharing a prefix become neighbours); a node
starts at (row, column) when the row differs from the row above at or
before that column, every other cell belongs to the node last started in
its column, and a node's parent is the node one column to the left.
Equal rows merge. Used by the importers (``load_tree``) and by the view
that drops frames (``views.keep_frames``). ``tree_from_parents`` makes a
tree of nodes given by their parents (the callers tree); ``array_tree``
makes any ``CallNode`` tree into arrays, so each derived view has one
implementation, on arrays. No Textual here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

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
    Shape,
    link_children,
)

Flags = npt.NDArray[np.uint8]


class MergedPaths(NamedTuple):
    """The nodes of merged paths: each one's key id and first cell (``row``, ``column``)
    in ``paths``; an empty ``paths`` gives the root alone."""

    key_id: Ids
    parent: Ids
    depth: npt.NDArray[np.int16]
    row: Ids
    column: Ids
    self_count: Counts
    total: Counts


def merge_paths(paths: Ids, counts: Counts) -> MergedPaths:
    """Merge root-first key paths (-1 padded) carrying ``counts`` into a tree.

    Nodes are numbered column by column (so by depth, a parent before its
    children): a cell's node is its column's offset plus the starts above it.
    """
    rows, width = paths.shape
    if rows == 0:
        none = np.zeros(1, np.int32)
        zero = np.zeros(1, np.int64)
        return MergedPaths(none, none, np.zeros(1, np.int16), none, none, zero, zero.copy())
    paths = np.ascontiguousarray(paths, np.int32)
    order = np.argsort(paths.view(np.dtype((np.void, 4 * width))).ravel()).astype(np.int32)
    ordered = paths[order]
    valid = ordered >= 0
    starts = valid.copy()
    starts[1:] &= np.logical_or.accumulate(ordered[1:] != ordered[:-1], axis=1)
    starts_by_column = np.ascontiguousarray(starts.T)
    per_column = starts_by_column.sum(axis=1)
    offsets = np.cumsum(per_column) - per_column
    node = np.cumsum(starts_by_column, axis=1, dtype=np.int32)  # [column, row]
    node += (offsets - 1).astype(np.int32)[:, None]
    start_rows = np.flatnonzero(starts_by_column)  # in node order, as column * rows + row
    size = len(start_rows)
    start_columns = np.repeat(np.arange(width, dtype=np.int32), per_column)
    start_rows -= start_columns.astype(np.int64) * rows
    parent = np.zeros(size, np.int32)
    parent[per_column[0] :] = node[start_columns[per_column[0] :] - 1, start_rows[per_column[0] :]]
    self_count = np.zeros(size, np.int64)
    np.add.at(self_count, node[valid.sum(axis=1) - 1, np.arange(rows)], counts[order])
    total = self_count.copy()
    bounds = np.append(offsets, size)
    for column in range(width - 1, 0, -1):  # bottom-up: a column's nodes are one id range
        below = slice(bounds[column], bounds[column + 1])
        np.add.at(total, parent[below], total[below])
    return MergedPaths(
        ordered[start_rows, start_columns], parent, start_columns.astype(np.int16),
        order[start_rows], start_columns.astype(np.int32), self_count, total,
    )  # fmt: skip


def path_matrix(cells: Ids, lengths: Counts) -> Ids:
    """Rows of ``lengths`` cells each, after a root column of 0s, padded with -1."""
    rows = len(lengths)
    width = int(lengths.max(initial=0)) + 1
    paths = np.full((rows, width), -1, np.int32)
    paths[:, 0] = 0
    # Cell k of row r goes to r * width + 1 + (k - the row's first cell).
    at = np.repeat(
        np.arange(rows, dtype=np.int64) * width + 1 - (np.cumsum(lengths) - lengths), lengths
    )
    at += np.arange(len(cells), dtype=np.int64)
    paths.ravel()[at] = cells
    return paths


def repeated_cells(paths: Ids, first_column: int) -> npt.NDArray[np.bool_]:
    """Per cell: is its key already on the row at an earlier column (from ``first_column`` on)."""
    part = paths[:, first_column:]
    ordered = np.sort(part, axis=1)
    rows = np.flatnonzero(((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(axis=1))
    repeated = np.zeros(paths.shape, np.bool_)
    if len(rows):  # recursion is rare: only its rows are sorted again, keeping columns
        part = part[rows]
        at = np.argsort(part, axis=1, kind="stable")
        ordered = np.take_along_axis(part, at, 1)
        hit_rows, hit_at = np.nonzero((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0))
        repeated[rows[hit_rows], at[hit_rows, hit_at + 1] + first_column] = True
    return repeated


def first_of_function(paths: Ids, merged: MergedPaths, first_column: int) -> Flags:
    """``FIRST_OF_FUNCTION`` for nodes at ``first_column`` or deeper whose key is
    not on the path above them (from ``first_column`` on)."""
    if not len(paths):
        return np.zeros(len(merged.row), np.uint8)
    repeated = repeated_cells(paths, first_column)[merged.row, merged.column]
    outer = (merged.column >= first_column) & ~repeated
    return np.where(outer, FIRST_OF_FUNCTION, 0).astype(np.uint8)


def merged_root(
    merged: MergedPaths,
    flags: Flags,
    keys: list[NodeKey],
    key_ids: dict[NodeKey, int] | None = None,
    sources: dict[int, str] | None = None,
    start_lines: dict[NodeKey, int] | None = None,
) -> LiveNode:
    """The root of a ``LiveTree`` of merged paths, nodes keyed by ``merged.key_id``
    (indices into ``keys``; ``key_ids`` its inverse, made if not given)."""
    return tree_from_parents(
        merged.parent, merged.depth, merged.key_id, flags, merged.self_count, merged.total,
        keys, key_ids, sources, start_lines,
    ).root()  # fmt: skip


def tree_from_parents(
    parent: Ids,
    depth: npt.NDArray[np.int16],
    key_id: Ids,
    flags: Flags,
    self_count: Counts,
    total: Counts,
    keys: list[NodeKey],
    key_ids: dict[NodeKey, int] | None = None,
    sources: dict[int, str] | None = None,
    start_lines: dict[NodeKey, int] | None = None,
) -> LiveTree:
    """A ``LiveTree`` of nodes given by their columns (node 0 is the root; any
    order otherwise), keyed by indices into ``keys`` (``key_ids`` its inverse,
    made if not given)."""
    if key_ids is None:
        key_ids = {key: index for index, key in enumerate(keys)}
    first_child, next_sibling = link_children(parent)
    shape = Shape(
        parent=parent, depth=depth, key_id=key_id, flags=flags, first_child=first_child,
        next_sibling=next_sibling, keys=keys, key_ids=key_ids, sources=sources or {},
        start_lines=start_lines,
    )  # fmt: skip
    return LiveTree(shape, self_count, total)


def sources_from(
    live: LiveTree, origin: npt.NDArray[np.integer[Any]], first: int
) -> dict[int, str]:
    """The file:line of nodes made from ``live``'s nodes ``origin`` (node
    ``first + i`` from ``origin[i]``), for a tree derived from ``live``."""
    if not live.sources:  # only while file:line is shown
        return {}
    sourced = np.flatnonzero(np.isin(origin, np.fromiter(live.sources, np.int64)))
    return {first + n: live.sources[int(origin[n])] for n in sourced.tolist()}


def ancestors(live: LiveTree, nodes: Counts) -> npt.NDArray[np.int64]:
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


def array_tree(node: CallNode) -> LiveTree:
    """``node`` and everything below it as arrays, ``node`` as the root.

    A live snapshot's root gives its own ``LiveTree``. Any other tree (a
    placeholder, a zoomed subtree, a test's plain nodes) is copied in one
    walk, flags set as ``Profile`` sets them (``FIRST_OF_FUNCTION`` from
    depth 2, below the process rows).
    """
    if isinstance(node, LiveNode) and node.index == ROOT:
        return node.live_tree
    rows: list[tuple[int, int, int, int, int, int]] = []  # parent, depth, key, flags, self, total
    key_ids: dict[NodeKey, int] = {}
    sources: dict[int, str] = {}
    on_path: dict[int, int] = {}  # key -> its frames on the path to the node (depth 2 on)
    stack: list[tuple[CallNode | None, int]] = [(node, ROOT)]  # (node, its parent's index)
    while stack:
        item, at = stack.pop()
        if item is None:  # done below node ``at``
            on_path[rows[at][2]] -= 1
            continue
        index = len(rows)
        depth = rows[at][1] + 1 if rows else 0
        key = key_ids.setdefault(item.key, len(key_ids))
        flags = (INLINED if item.inlined else 0) | (UNRESOLVED if item.unresolved else 0)
        if depth >= 2:
            flags |= 0 if on_path.get(key) else FIRST_OF_FUNCTION
            on_path[key] = on_path.get(key, 0) + 1
            stack.append((None, index))
        if item.source:
            sources[index] = item.source
        rows.append((at, depth, key, flags, item.self_count, item.total_count))
        stack.extend((child, index) for child in reversed(item.children))
    columns = np.array(rows, np.int64)
    return tree_from_parents(
        columns[:, 0].astype(np.int32), columns[:, 1].astype(np.int16),
        columns[:, 2].astype(np.int32), columns[:, 3].astype(np.uint8), columns[:, 4].copy(),
        columns[:, 5].copy(), list(key_ids), key_ids, sources,
    )  # fmt: skip
