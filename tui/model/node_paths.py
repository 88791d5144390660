"""Paths into a call tree: the node at a path, the branch down to it, and search.

A ``NodePath`` (``derived``) is the sibling keys from a tree's top down to a
node; the views keep their zoom, cursor and expanded rows as paths, so they
survive every new snapshot. ``node_at`` follows a path, ``chain_to`` cuts
the branch down to one (what ``w`` exports of a zoom), ``hot_chain`` the
hottest path below a node as far as it is worth opening, ``compile_search``
makes the ``/`` regex, and ``next_match`` steps through the matches in
display order, visiting only the subtrees that lead to one
(``views.leads_to_match``). No Textual here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bpftop.symbols.python.code import function_label
from bpftop.tui.model.derived import Match, NodePath, leads_to_match
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.store import LiveNode, NodeKey


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


HOT_MIN_PCT = 1.0
"""The hot path never opens a child under this share of the total (``--hot-min``)."""
HOT_OF_PARENT = 0.1
"""... nor a child under this fraction of its parent."""


def hot_chain(
    node: CallNode,
    total: int,
    min_pct: float = HOT_MIN_PCT,
    of_parent: float = HOT_OF_PARENT,
    own_stops: bool = True,
) -> NodePath:
    """The keys from ``node`` down its hottest children, stopping where a step is
    not worth taking (as perf report's call-chain threshold does): at a node whose
    own samples outweigh its hottest child (unless not ``own_stops``: a callers
    tree, where own samples are not where paths end), or before a child under
    ``min_pct`` percent of ``total`` or under ``of_parent`` of its parent's samples."""
    path: list[NodeKey] = []
    while node.has_children:
        child = node.children[0]  # hottest first
        if (
            (own_stops and node.self_count > child.total_count)
            or 100 * child.total_count < min_pct * total
            or child.total_count < of_parent * node.total_count
        ):
            break
        path.append(child.key)
        node = child
    return tuple(path)


def by_function(key: NodeKey) -> NodeKey:
    """A Python frame's key without its line (``QUALNAME (FILE)``); others as they are."""
    label, module, kernel = key
    return (function_label(label, module), module, kernel)


def regrouped_path(tree: CallNode, path: NodePath) -> NodePath | None:
    """``path`` in ``tree`` where Python frames may be grouped the other way (by
    line or by function), or None: each step goes to a child of the same key, else
    of the same function (the hottest line of it that leads on to the rest)."""
    found: list[NodeKey] = []
    pending = [iter(_same_code(tree, path[0]))] if path else []
    while pending:
        step = next(pending[-1], None)
        if step is None:
            pending.pop()
            if found:
                found.pop()
            continue
        found.append(step.key)
        if len(found) == len(path):
            return tuple(found)
        pending.append(iter(_same_code(step, path[len(found)])))
    return None


def _same_code(node: CallNode, key: NodeKey) -> list[CallNode]:
    """The children of ``node`` of ``key``, or of its function (hottest first)."""
    exact = [c for c in node.children if c.key == key]
    want = by_function(key)
    return exact or [c for c in node.children if by_function(c.key) == want]


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
    leads = leads_to_match(tree.live_tree, match)
    here = current or ()

    def below(node: CallNode, path: NodePath) -> tuple[CallNode, ...]:
        return tuple(
            c
            for c in node.children
            if isinstance(c, LiveNode)
            and (leads[c.index] or here[: len(path) + 1] == (*path, c.key))
        )

    return below
