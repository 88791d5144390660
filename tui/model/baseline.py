"""A frozen baseline profile and the per-node / per-function change against it.

``Baseline`` keeps one snapshot's tree and function table. ``node_delta`` and
``function_delta`` give (Δ self %, Δ total %) of a node or function now vs.
then, as shares of each profile's own total, so a baseline taken at 1,000
samples compares fairly with a profile of 50,000. Lookups walk the baseline
tree with per-node child indexes built lazily, so only what is on screen
costs anything. No Textual here.
"""

from __future__ import annotations

from bpftop.tui.model.derived import NodePath
from bpftop.tui.model.snapshot import CallNode, HotFunction
from bpftop.tui.model.store import NodeKey

Delta = tuple[float, float]


class Baseline:
    """What the profile looked like when the user pressed the baseline key."""

    def __init__(self, tree: CallNode, hot: tuple[HotFunction, ...]) -> None:
        self.tree = tree
        self.total = max(1, tree.total_count)
        self._functions = {(f.label, f.module, f.kernel): f for f in hot}
        self._index: dict[int, dict[NodeKey, CallNode]] = {}

    def node(self, path: NodePath) -> CallNode | None:
        """The baseline's node at ``path``, or None if it did not exist then."""
        node = self.tree
        for key in path:
            children = self._index.get(id(node))
            if children is None:
                children = {c.key: c for c in node.children}
                self._index[id(node)] = children
            found = children.get(key)
            if found is None:
                return None
            node = found
        return node

    def node_delta(self, node: CallNode, path: NodePath, total: int) -> Delta:
        """(Δ self %, Δ total %) of ``node`` (in a profile of ``total`` samples)."""
        then = self.node(path)
        now_self, now_total = _shares(node.self_count, node.total_count, total)
        if then is None:
            return now_self, now_total
        old_self, old_total = _shares(then.self_count, then.total_count, self.total)
        return now_self - old_self, now_total - old_total

    def function_delta(self, fn: HotFunction, total: int) -> Delta:
        then = self._functions.get((fn.label, fn.module, fn.kernel))
        now_self, now_total = _shares(fn.self_count, fn.total_count, total)
        if then is None:
            return now_self, now_total
        old_self, old_total = _shares(then.self_count, then.total_count, self.total)
        return now_self - old_self, now_total - old_total


def _shares(self_count: int, total_count: int, total: int) -> Delta:
    denom = max(1, total)
    return 100 * self_count / denom, 100 * total_count / denom


def format_delta(value: float) -> str:
    """``+1.2`` / ``-0.4`` / ``  0.0`` in six cells."""
    if abs(value) < 0.05:
        return "   0.0"
    return f"{value:+6.1f}"


def delta_style(value: float) -> str:
    """Hotter than the baseline is red, cooler green, unchanged dim."""
    if value >= 0.05:
        return "bold red"
    if value <= -0.05:
        return "green"
    return "dim"
