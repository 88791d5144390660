"""Derived views of an immutable call tree: zoom, filter, callers, search, sort.

Every function here takes a frozen ``CallNode`` tree and returns new frozen
values (sharing unchanged subtrees), so the app can derive what a view shows
without touching the collector's ``Profile``. No Textual here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from bpftop.tui.model import live_views
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


def filter_tree(node: CallNode, match: Match) -> CallNode | None:
    """Keep only the stacks with at least one frame that matches (node itself excluded)."""
    live = live_views.live_root(node)
    if live is not None:
        return live_views.filtered(live, match)
    kept: list[CallNode] = []
    for child in node.children:
        if match(child):
            kept.append(child)
        else:
            sub = filter_tree(child, match)
            if sub is not None:
                kept.append(sub)
    if not kept:
        return None
    kept.sort(key=lambda c: (-c.total_count, c.label, c.module, c.kernel))
    total = sum(c.total_count for c in kept)
    return node._replace(self_count=0, total_count=total, children=tuple(kept))


def hot_from_tree(tree: CallNode, limit: int | None = None) -> tuple[HotFunction, ...]:
    """Per-function self/total of a (derived) tree; total counts a sample once."""
    live = live_views.live_root(tree)
    if live is not None:
        return live_views.hot_of(live, limit)
    counters: dict[NodeKey, list[int]] = {}
    sources: dict[NodeKey, str] = {}
    on_path: dict[NodeKey, int] = {}
    stack: list[tuple[CallNode, bool]] = [(c, False) for c in _frames_below(tree)]
    while stack:
        node, leaving = stack.pop()
        key = node.key
        if leaving:
            on_path[key] -= 1
            continue
        entry = counters.setdefault(key, [0, 0])
        entry[0] += node.self_count
        if not on_path.get(key):
            entry[1] += node.total_count
        if node.source:
            sources.setdefault(key, node.source)
        on_path[key] = on_path.get(key, 0) + 1
        stack.append((node, True))
        stack.extend((child, False) for child in node.children)
    rows = [HotFunction(*k, c[0], c[1], sources.get(k, "")) for k, c in counters.items()]
    rows.sort(key=lambda f: (-f.self_count, -f.total_count, f.label, f.module, f.kernel))
    return tuple(rows if limit is None else rows[:limit])


def _frames_below(tree: CallNode) -> Iterator[CallNode]:
    """The outermost frames: children of the process rows under the synthetic root."""
    for process in tree.children:
        yield from process.children


def callers_tree(tree: CallNode, key: NodeKey, expected: int | None = None) -> CallNode:
    """Bottom-up view of one function: root -> the function -> its callers -> theirs.

    Each caller path is weighted by the samples the function spent under it
    (outermost occurrence only, so recursion is not counted twice). With
    ``expected`` (the function's total samples) the walk stops once all of
    them are found, which for hot functions is early.
    """
    live = live_views.live_root(tree)
    if live is not None:
        return live_views.callers(live, key)
    inverted: dict[NodeKey, _Inv] = {}
    label, module, kernel = key
    found = 0
    seen: list[tuple[CallNode, int]] = []  # (node, index of its parent in seen)
    stack: list[tuple[CallNode, int]] = [(c, -1) for c in reversed(tree.children)]
    while stack:
        node, parent = stack.pop()
        if node.label == label and node.module == module and node.kernel == kernel:
            _add_inverted(inverted, _ancestors(seen, parent), node.total_count)
            found += node.total_count
            if expected is not None and found >= expected:
                break
            continue
        seen.append((node, parent))
        here = len(seen) - 1
        stack.extend([(child, here) for child in reversed(node.children)])
    callers = _freeze_inv(inverted)
    total = sum(c.total_count for c in callers)
    fn = CallNode(label, module, kernel, 0, total, callers)
    return CallNode("callers", total_count=total, children=(fn,) if total else ())


def _ancestors(seen: list[tuple[CallNode, int]], index: int) -> Iterator[CallNode]:
    """The nodes from ``seen[index]`` up to the top, nearest first."""
    while index >= 0:
        node, index = seen[index]
        yield node


class _Inv:
    __slots__ = ("children", "node", "self_count", "total_count")

    def __init__(self, node: CallNode) -> None:
        self.node = node
        self.self_count = 0
        self.total_count = 0
        self.children: dict[NodeKey, _Inv] = {}


def _add_inverted(level: dict[NodeKey, _Inv], callers: Iterator[CallNode], count: int) -> None:
    inv: _Inv | None = None
    for caller in callers:
        inv = level.get(caller.key)
        if inv is None:
            inv = level[caller.key] = _Inv(caller)
        inv.total_count += count
        level = inv.children
    if inv is not None:
        inv.self_count += count


def _freeze_inv(level: dict[NodeKey, _Inv]) -> tuple[CallNode, ...]:
    nodes = [
        inv.node._replace(self_count=inv.self_count, total_count=inv.total_count,
                children=_freeze_inv(inv.children))
        for inv in level.values()
    ]  # fmt: skip
    nodes.sort(key=lambda c: (-c.total_count, c.label, c.module, c.kernel))
    return tuple(nodes)


def keep_frames(tree: CallNode, keep: Match) -> CallNode:
    """Drop the frames ``keep`` rejects (below the process rows), merging what was under them.

    A dropped frame's children move up to its parent (merging with equal
    siblings) and its self samples become the parent's. Totals are unchanged.
    """
    live = live_views.live_root(tree)
    if live is not None:
        return live_views.kept_frames(live, keep)
    processes = []
    for process in tree.children:
        acc = _Inv(process)
        _keep_into(acc, process.children, keep)
        acc.self_count += process.self_count
        acc.total_count = process.total_count
        processes.append(_freeze_acc(acc))
    return tree._replace(children=tuple(processes))


def _keep_into(acc: _Inv, children: tuple[CallNode, ...], keep: Match) -> None:
    for child in children:
        if keep(child):
            sub = acc.children.get(child.key)
            if sub is None:
                sub = acc.children[child.key] = _Inv(child)
            sub.self_count += child.self_count
            sub.total_count += child.total_count
            _keep_into(sub, child.children, keep)
        else:
            acc.self_count += child.self_count
            _keep_into(acc, child.children, keep)


def _freeze_acc(acc: _Inv) -> CallNode:
    return acc.node._replace(self_count=acc.self_count, total_count=acc.total_count,
                   children=_freeze_inv(acc.children))  # fmt: skip


def compile_search(pattern: str) -> re.Pattern[str] | str:
    """The compiled regex (case-insensitive unless it has capitals), or the error text."""
    flags = 0 if any(ch.isupper() for ch in pattern) else re.IGNORECASE
    try:
        return re.compile(pattern, flags)
    except re.error as err:
        return f"bad regex: {err}"


def matching_paths(tree: CallNode, match: Match, limit: int = 10_000) -> list[NodePath]:
    """Paths of matching nodes in display order (hottest child first), at most ``limit``."""
    found: list[NodePath] = []
    below = _search_children(tree, match, None)
    stack: list[tuple[CallNode, NodePath]] = [(c, (c.key,)) for c in reversed(below(tree, ()))]
    while stack and len(found) < limit:
        node, path = stack.pop()
        if match(node):
            found.append(path)
        stack.extend((c, (*path, c.key)) for c in reversed(below(node, path)))
    return found


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
    """What a search walk visits below a node: on a live snapshot only the
    subtrees that lead to a match (or to ``current``), so a rare match costs
    its paths, not the whole profile."""
    live = live_views.live_root(tree)
    if live is None:
        return lambda node, path: node.children
    leads = live_views.leads_to_match(live, match)
    here = current or ()

    def below(node: CallNode, path: NodePath) -> tuple[CallNode, ...]:
        return tuple(
            c
            for c in node.children
            if isinstance(c, LiveNode)
            and (leads[c.index] or here[: len(path) + 1] == (*path, c.key))
        )

    return below


def hottest_path_of(tree: CallNode, key: NodeKey) -> NodePath | None:
    """The path of the occurrence of ``key`` with the most samples.

    Subtrees no hotter than the best occurrence found so far are skipped (an
    occurrence is never hotter than its ancestors), so this is quick.
    """
    live = live_views.live_root(tree)
    if live is not None:
        return live_views.hottest_occurrence(live, key)
    best_count = 0
    best: NodePath | None = None
    stack: list[tuple[CallNode, NodePath]] = [(c, (c.key,)) for c in reversed(tree.children)]
    while stack:
        node, path = stack.pop()
        if node.total_count <= best_count:
            continue
        if node.key == key:
            best_count, best = node.total_count, path
            continue
        stack.extend((c, (*path, c.key)) for c in reversed(node.children))
    return best


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
