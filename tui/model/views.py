"""Derived views of an immutable call tree: zoom, filter, callers, search, sort.

Every function here takes a frozen ``CallNode`` tree and returns new frozen
values (sharing unchanged subtrees), so the app can derive what a view shows
without touching the collector's ``Profile``. No Textual here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bpftop.tui.model import live_views
from bpftop.tui.model.path_tree import array_tree
from bpftop.tui.model.snapshot import CallNode, HotFunction
from bpftop.tui.model.store import LiveNode

NodeKey = tuple[str, str, bool]
NodePath = tuple[NodeKey, ...]
Match = Callable[[CallNode], bool]

HOT_COLUMNS = ("self", "total", "samples", "function", "module")


def node_at(tree: CallNode, path: NodePath) -> CallNode | None:
    """The node reached from ``tree`` by sibling keys, or None."""
    node = tree
    for key in path:
        for child in node.children:
            if child.key == key:
                node = child
                break
        else:
            return None
    return node


def chain_to(tree: CallNode, path: NodePath) -> CallNode:
    """A tree holding only the branch down to ``path`` (for exporting a zoom)."""
    nodes = [tree]
    for n in range(1, len(path) + 1):
        found = node_at(tree, path[:n])
        if found is None:
            break
        nodes.append(found)
    result = nodes[-1]
    for parent in reversed(nodes[:-1]):
        result = parent._replace(self_count=0, total_count=result.total_count, children=(result,))
    return result


def filter_tree(tree: CallNode, match: Match) -> CallNode | None:
    """Keep only the stacks with at least one frame that matches (the root excluded)."""
    return live_views.filtered(array_tree(tree), match)


def hot_from_tree(tree: CallNode, limit: int | None = None) -> tuple[HotFunction, ...]:
    """Per-function self/total of a (derived) tree; total counts a sample once."""
    return live_views.hot_of(array_tree(tree), limit)


def callers_tree(tree: CallNode, key: NodeKey) -> CallNode:
    """Bottom-up view of one function: root -> the function -> its callers -> theirs.

    Each caller path is weighted by the samples the function spent under it
    (outermost occurrence only, so recursion is not counted twice).
    """
    return live_views.callers(array_tree(tree), key)


def keep_frames(tree: CallNode, keep: Match) -> CallNode:
    """Drop the frames ``keep`` rejects (below the process rows), merging what was under them.

    A dropped frame's children move up to its parent (merging with equal
    siblings) and its self samples become the parent's. Totals are unchanged.
    """
    return live_views.kept_frames(array_tree(tree), keep)


def compile_search(pattern: str) -> re.Pattern[str] | str:
    """The compiled regex (case-insensitive unless it has capitals), or the error text."""
    flags = 0 if any(ch.isupper() for ch in pattern) else re.IGNORECASE
    try:
        return re.compile(pattern, flags)
    except re.error as err:
        return f"bad regex: {err}"


def next_match(
    tree: CallNode, match: Match, current: NodePath | None, step: int
) -> NodePath | None:
    """The match after (``step`` 1) or before (-1) ``current`` in display order, wrapping.

    Walks only as far as needed: forward it stops at the first match past
    ``current``; backward at ``current`` unless it has to wrap.
    """
    first: NodePath | None = None
    previous: NodePath | None = None
    passed = current is None
    below = _search_children(tree, match, current)
    stack: list[tuple[CallNode, NodePath]] = [(c, (c.key,)) for c in reversed(below(tree, ()))]
    while stack:
        node, path = stack.pop()
        if path == current:
            if step < 0 and previous is not None:
                return previous
            passed = True
        elif match(node):
            if passed and step > 0:
                return path
            first = first or path
            previous = path
        stack.extend((c, (*path, c.key)) for c in reversed(below(node, path)))
    return first if step > 0 else previous


Children = Callable[[CallNode, NodePath], tuple[CallNode, ...]]


def _search_children(tree: CallNode, match: Match, current: NodePath | None) -> Children:
    """What a search walk visits below a node: on a live snapshot (or a zoom
    into one) only the subtrees that lead to a match (or to ``current``), so a
    rare match costs its paths, not the whole profile."""
    if not isinstance(tree, LiveNode):
        return lambda node, path: node.children
    leads = live_views.leads_to_match(tree.live_tree, match)
    here = current or ()

    def below(node: CallNode, path: NodePath) -> tuple[CallNode, ...]:
        return tuple(
            c
            for c in node.children
            if isinstance(c, LiveNode)
            and (leads[c.index] or here[: len(path) + 1] == (*path, c.key))
        )

    return below


def hottest_path_of(node: CallNode, key: NodeKey) -> NodePath | None:
    """The path below ``node`` of the occurrence of ``key`` with the most
    samples; of equal ones, the first in display order. On a live node (a
    zoom into a snapshot) the snapshot's arrays are searched, not copied."""
    if isinstance(node, LiveNode):
        return live_views.hottest_occurrence(node.live_tree, key, node.index)
    return live_views.hottest_occurrence(array_tree(node), key)


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


def trend(before: float | None, now: float, threshold: float = 0.05) -> str:
    """A marker comparing a share with the last tick's: ▲ hotter, ▼ cooler, + new."""
    if before is None:
        return "+"
    if now > before + threshold:
        return "▲"
    if now < before - threshold:
        return "▼"
    return " "
