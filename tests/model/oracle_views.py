"""The derived views walked node by node: the oracle the array versions are tested against.

Production computes each derived view once, on a tree's arrays
(``tui.model.derived``, ``tui.model.callers_tree``). These walks say the same
things the plain way, one node at a time, over any ``CallNode`` tree; the
tests compare the two on random profiles. Nothing in ``tui/`` imports this.
"""

from __future__ import annotations

from collections.abc import Iterator

from bpftop.tui.model.derived import Match, NodePath
from bpftop.tui.model.snapshot import CallNode, HotFunction
from bpftop.tui.model.store import NodeKey


def filter_tree(node: CallNode, match: Match) -> CallNode | None:
    """Keep only the stacks with at least one frame that matches (node itself excluded)."""
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


def callers_tree(tree: CallNode, key: NodeKey) -> CallNode:
    """Bottom-up view of one function: root -> the function -> its callers -> theirs.

    Each caller path is weighted by the samples the function spent under it
    (outermost occurrence only, so recursion is not counted twice); each
    node's self count is the samples on its paths with the function as leaf.
    """
    inverted: dict[NodeKey, _Inv] = {}
    seen: list[tuple[CallNode, int]] = []  # (node, index of its parent in seen)
    stack: list[tuple[CallNode, int]] = [(c, -1) for c in reversed(tree.children)]
    while stack:
        node, parent = stack.pop()
        if node.key == key:
            leaf = _own_samples(node, key)
            _add_inverted(inverted, _ancestors(seen, parent), node.total_count, leaf)
            continue
        seen.append((node, parent))
        here = len(seen) - 1
        stack.extend([(child, here) for child in reversed(node.children)])
    callers = _freeze_inv(inverted)
    total = sum(c.total_count for c in callers)
    fn = CallNode(*key, sum(c.self_count for c in callers), total, callers)
    return CallNode("callers", total_count=total, children=(fn,) if total else ())


def _own_samples(node: CallNode, key: NodeKey) -> int:
    """The self samples of ``node`` and of every node of ``key`` below it."""
    own = node.self_count
    for child in node.children:
        own += _own_samples(child, key) if child.key == key else _own_below(child, key)
    return own


def _own_below(node: CallNode, key: NodeKey) -> int:
    return sum(_own_samples(c, key) if c.key == key else _own_below(c, key) for c in node.children)


def _ancestors(seen: list[tuple[CallNode, int]], index: int) -> Iterator[CallNode]:
    """The nodes from ``seen[index]`` up to the top, nearest first."""
    while index >= 0:
        node, index = seen[index]
        yield node


class _Inv:
    """A node being built: its counts and children by key."""

    __slots__ = ("children", "node", "self_count", "total_count")

    def __init__(self, node: CallNode) -> None:
        self.node = node
        self.self_count = 0
        self.total_count = 0
        self.children: dict[NodeKey, _Inv] = {}


def _add_inverted(
    level: dict[NodeKey, _Inv], callers: Iterator[CallNode], count: int, leaf: int
) -> None:
    for caller in callers:
        inv = level.get(caller.key)
        if inv is None:
            inv = level[caller.key] = _Inv(caller)
        inv.total_count += count
        inv.self_count += leaf
        level = inv.children


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


def hottest_path_of(tree: CallNode, key: NodeKey) -> NodePath | None:
    """The path (below ``tree``) of the occurrence of ``key`` with the most
    samples; of equal ones, the first in display order.

    Subtrees no hotter than the best occurrence found so far are skipped (an
    occurrence is never hotter than its ancestors).
    """
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


def matching_paths(tree: CallNode, match: Match, limit: int = 10_000) -> list[NodePath]:
    """Paths (below ``tree``) of matching nodes in display order (hottest child
    first), at most ``limit``."""
    found: list[NodePath] = []
    stack: list[tuple[CallNode, NodePath]] = [(c, (c.key,)) for c in reversed(tree.children)]
    while stack and len(found) < limit:
        node, path = stack.pop()
        if match(node):
            found.append(path)
        stack.extend((c, (*path, c.key)) for c in reversed(node.children))
    return found
