"""The live profile: a mutable accumulator the collector thread owns.

``Profile.add`` folds one symbolized stack (root-first) into a mutable call
tree and into per-function self/total counters in O(depth). ``tree()`` and
``hot_functions()`` freeze that state into the immutable values of
``tui.model.snapshot``. Freezing is incremental too: a subtree that received
no sample since the last freeze reuses its previous ``CallNode``.

Only the collector thread may call into a ``Profile``; the values it returns
are immutable and safe to hand to any thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from bpftop.symbols.frame import Frame
from bpftop.tui.model.snapshot import CallNode, HotFunction

NodeKey = tuple[str, str, bool]
"""(label, module, kernel): identity of a node among its siblings and of a function."""

ROOT_LABEL = "all"


class _Node:
    """A mutable call-tree node; ``frozen`` caches its last immutable copy."""

    __slots__ = ("children", "frozen", "kernel", "label", "module", "self_count", "total_count")

    def __init__(self, label: str, module: str = "", kernel: bool = False) -> None:
        self.label = label
        self.module = module
        self.kernel = kernel
        self.self_count = 0
        self.total_count = 0
        self.children: dict[NodeKey, _Node] = {}
        self.frozen: CallNode | None = None

    def child(self, key: NodeKey) -> _Node:
        node = self.children.get(key)
        if node is None:
            node = _Node(*key)
            self.children[key] = node
        return node

    def freeze(self) -> CallNode:
        """The immutable copy; rebuilt only along paths that changed."""
        if self.frozen is not None:
            return self.frozen
        kids = [child.frozen or child.freeze() for child in self.children.values()]
        if len(kids) > 1:
            kids.sort(key=_child_order)
        self.frozen = CallNode(
            label=self.label,
            module=self.module,
            kernel=self.kernel,
            self_count=self.self_count,
            total_count=self.total_count,
            children=tuple(kids),
        )
        return self.frozen


def _child_order(node: CallNode) -> tuple[int, str, str, bool]:
    return (-node.total_count, node.label, node.module, node.kernel)


def _hot_order(fn: HotFunction) -> tuple[int, int, str, str, bool]:
    return (-fn.self_count, -fn.total_count, fn.label, fn.module, fn.kernel)


def frame_key(frame: Frame) -> NodeKey:
    """The sibling/function identity of a frame."""
    return (frame.label, frame.module, frame.kernel)


class Profile:
    """Aggregates stacks into a call tree and a hot-function table."""

    def __init__(self) -> None:
        self._root = _Node(ROOT_LABEL)
        # function key -> [self_count, total_count]
        self._functions: dict[NodeKey, list[int]] = {}
        self._hot_cache: tuple[HotFunction, ...] | None = None

    @property
    def total_samples(self) -> int:
        return self._root.total_count

    def reset(self) -> None:
        """Forget everything collected so far."""
        self._root = _Node(ROOT_LABEL)
        self._functions = {}
        self._hot_cache = None

    def add(self, process: str, frames: Sequence[Frame], count: int = 1) -> None:
        """Add ``count`` samples of one stack, ``frames`` root-first, leaf last."""
        if count <= 0:
            return
        node = self._root
        node.total_count += count
        node.frozen = None
        node = node.child((process, "", False))
        node.total_count += count
        node.frozen = None
        keys = [frame_key(frame) for frame in frames]
        for key in keys:
            node = node.child(key)
            node.total_count += count
            node.frozen = None
        node.self_count += count
        self._count_functions(keys, count)

    def _count_functions(self, keys: list[NodeKey], count: int) -> None:
        if not keys:
            return
        functions = self._functions
        for key in set(keys):  # once per sample, even when it recurses
            counters = functions.get(key)
            if counters is None:
                counters = functions[key] = [0, 0]
            counters[1] += count
        functions[keys[-1]][0] += count
        self._hot_cache = None

    def tree(self) -> CallNode:
        """The immutable call tree: "all" -> processes -> outermost frames -> ..."""
        return self._root.freeze()

    def hot_functions(self, limit: int | None = None) -> tuple[HotFunction, ...]:
        """Functions by self samples (then total, then label), hottest first."""
        if self._hot_cache is None:
            rows = [
                HotFunction(label, module, kernel, counters[0], counters[1])
                for (label, module, kernel), counters in self._functions.items()
            ]
            rows.sort(key=_hot_order)
            self._hot_cache = tuple(rows)
        return self._hot_cache if limit is None else self._hot_cache[:limit]
