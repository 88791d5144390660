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

import itertools
import operator
from collections.abc import Sequence

from bpftop.symbols.frame import Frame
from bpftop.tui.model.snapshot import CallNode, HotFunction

NodeKey = tuple[str, str, bool]
"""(label, module, kernel): identity of a node among its siblings and of a function."""

ROOT_LABEL = "all"
MAX_MEMO = 65_536
"""Distinct stacks remembered for the fast path (more than the collector caches)."""


class _Node:
    """A mutable call-tree node; ``frozen`` caches its last immutable copy."""

    __slots__ = (
        "children",
        "dead",
        "frozen",
        "inlined",
        "kernel",
        "label",
        "module",
        "self_count",
        "source",
        "total_count",
        "unresolved",
    )

    def __init__(self, label: str, module: str = "", kernel: bool = False) -> None:
        self.label = label
        self.module = module
        self.kernel = kernel
        self.source = ""
        self.inlined = False
        self.unresolved = False
        self.dead = False  # taken out of the tree by ``Profile.remove``
        self.self_count = 0
        self.total_count = 0
        self.children: dict[NodeKey, _Node] = {}
        self.frozen: CallNode | None = None

    def key_of(self) -> NodeKey:
        return (self.label, self.module, self.kernel)

    def child(self, key: NodeKey) -> _Node:
        node = self.children.get(key)
        if node is None:
            node = _Node(*key)
            self.children[key] = node
        return node

    def freeze(self) -> CallNode:
        """The immutable copy; rebuilt only along paths that changed."""
        frozen = self.frozen
        if frozen is not None:
            return frozen
        children = self.children
        kids: tuple[CallNode, ...] = ()
        if len(children) == 1:
            for child in children.values():
                kids = (child.frozen or child.freeze(),)
        elif children:
            ordered = [child.frozen or child.freeze() for child in children.values()]
            # Hottest first, ties by (label, module, kernel): two stable sorts
            # with C-level keys, cheaper than one Python key on wide nodes.
            ordered.sort(key=_BY_KEY)
            ordered.sort(key=_BY_TOTAL, reverse=True)
            kids = tuple(ordered)
        frozen = self.frozen = _new_tuple(CallNode, (
            self.label, self.module, self.kernel, self.self_count, self.total_count, kids,
            self.source, self.inlined, self.unresolved,
        ))  # fmt: skip
        return frozen


# CallNode's fields in declaration order, without the keyword handling of its
# __new__: the one hot spot of the tick (tens of thousands of nodes a tick).
_new_tuple = tuple.__new__


class _Memo:
    """The nodes and function counters one distinct stack touches."""

    __slots__ = ("counters", "frames", "leaf", "nodes", "process")

    def __init__(
        self,
        process: str,
        frames: tuple[Frame, ...],
        nodes: list[_Node],
        counters: list[list[int]],
        leaf: int,
    ) -> None:
        self.process = process
        self.frames = frames  # kept alive, so its id() is not reused
        self.nodes = nodes
        self.counters = counters
        self.leaf = leaf


def _halve(
    node: _Node, functions: dict[NodeKey, list[int]], on_path: dict[NodeKey, int], depth: int
) -> None:
    """Halve a subtree in place and recount per-function totals (once per sample).

    ``depth`` 0 is the root, 1 a process; frames (depth >= 2) are functions.
    """
    node.self_count //= 2
    node.frozen = None
    total = node.self_count
    for key, child in list(node.children.items()):
        counted = on_path.get(key, 0)
        on_path[key] = counted + 1
        _halve(child, functions, on_path, depth + 1)
        on_path[key] = counted
        if child.total_count <= 0:
            del node.children[key]
            continue
        total += child.total_count
        if depth == 0:
            continue
        entry = functions.setdefault(key, [0, 0])
        entry[0] += child.self_count
        if not counted:
            entry[1] += child.total_count
    node.total_count = total


_BY_KEY = operator.itemgetter(0, 1, 2)  # CallNode (label, module, kernel)
_BY_TOTAL = operator.itemgetter(4)  # CallNode.total_count


def _hot_order(fn: HotFunction) -> tuple[int, int, str, str, bool]:
    return (-fn.self_count, -fn.total_count, fn.label, fn.module, fn.kernel)


def frame_key(frame: Frame) -> NodeKey:
    """The sibling/function identity of a frame."""
    return (frame.label, frame.module, frame.kernel)


def frame_source(frame: Frame) -> str:
    """``file.c:123`` (the file's basename) when DWARF knows it, else ""."""
    if not frame.file:
        return ""
    name = frame.file.rsplit("/", 1)[-1]
    return f"{name}:{frame.line}" if frame.line else name


class Profile:
    """Aggregates stacks into a call tree and a hot-function table."""

    def __init__(self) -> None:
        self._root = _Node(ROOT_LABEL)
        # function key -> [self_count, total_count]
        self._functions: dict[NodeKey, list[int]] = {}
        self._sources: dict[NodeKey, str] = {}
        self._hot_cache: tuple[HotFunction, ...] | None = None
        self._memo: dict[int, _Memo] = {}

    @property
    def total_samples(self) -> int:
        return self._root.total_count

    def reset(self) -> None:
        """Forget everything collected so far."""
        self._root = _Node(ROOT_LABEL)
        self._functions = {}
        self._sources = {}
        self._hot_cache = None
        self._memo = {}

    def add(self, process: str, frames: Sequence[Frame], count: int = 1) -> None:
        """Add ``count`` samples of one stack, ``frames`` root-first, leaf last.

        A tuple of frames seen before (the collector reuses one tuple per
        distinct stack) takes a fast path over the nodes remembered for it.
        """
        if count <= 0:
            return
        memo = self._memo.get(id(frames))
        if (
            memo is not None
            and memo.frames is frames
            and memo.process == process
            and not memo.nodes[-1].dead
        ):
            for node in memo.nodes:
                node.total_count += count
                node.frozen = None
            memo.nodes[-1].self_count += count
            for counters in memo.counters:
                counters[1] += count
            memo.counters[memo.leaf][0] += count
            self._hot_cache = None
            return
        self._add_slowly(process, frames, count)

    def _add_slowly(self, process: str, frames: Sequence[Frame], count: int) -> None:
        nodes: list[_Node] = []
        node = self._root
        node.total_count += count
        node.frozen = None
        nodes.append(node)
        node = node.child((process, "", False))
        node.total_count += count
        node.frozen = None
        nodes.append(node)
        keys = [frame_key(frame) for frame in frames]
        for key, frame in zip(keys, frames, strict=True):
            node = node.child(key)
            node.total_count += count
            node.frozen = None
            nodes.append(node)
            # A new node notes what kind of frame it is; an old one takes
            # file:line when lines were turned on after it was made.
            if not node.total_count - count or (frame.file and not node.source):
                self._describe(node, key, frame)
        node.self_count += count
        self._count_functions(keys, count)
        if keys and isinstance(frames, tuple):
            self._remember(process, frames, nodes, keys)

    def _remember(
        self, process: str, frames: tuple[Frame, ...], nodes: list[_Node], keys: list[NodeKey]
    ) -> None:
        if len(self._memo) >= MAX_MEMO:
            self._memo.clear()
        unique = list(dict.fromkeys(keys))
        counters = [self._functions[key] for key in unique]
        leaf = unique.index(keys[-1])
        self._memo[id(frames)] = _Memo(process, frames, nodes, counters, leaf)

    def remove(self, process: str, frames: Sequence[Frame], count: int = 1) -> None:
        """Take back ``count`` samples of a stack added before (a sliding window's tail).

        Nodes and functions left with no samples disappear.
        """
        keys = [(process, "", False), *(frame_key(frame) for frame in frames)]
        path = [self._root]
        for key in keys:
            found = path[-1].children.get(key)
            if found is None:
                return  # never added (or already reset): nothing to take back
            path.append(found)
        count = min(count, path[-1].self_count)
        if count <= 0:
            return
        path[-1].self_count -= count
        for parent, node in itertools.pairwise(path):
            node.total_count -= count
            node.frozen = None
            if node.total_count <= 0:
                # Everything below it was on this path and goes too, so a
                # remembered stack through it always ends at a dead node.
                del parent.children[node.key_of()]
                node.dead = True
        self._root.total_count -= count
        self._root.frozen = None
        self._uncount_functions(keys[1:], count)

    def _uncount_functions(self, keys: list[NodeKey], count: int) -> None:
        if not keys:
            return
        functions = self._functions
        functions[keys[-1]][0] -= count
        for key in set(keys):
            counters = functions[key]
            counters[1] -= count
            if counters[1] <= 0:
                del functions[key]  # its nodes all died: no live memo refers to it
        self._hot_cache = None

    def halve(self) -> None:
        """Halve every count (rounding down; emptied nodes go): one step of decay."""
        self._functions = {}
        self._hot_cache = None
        self._memo = {}
        _halve(self._root, self._functions, {}, 0)
        self._root.frozen = None

    def _describe(self, node: _Node, key: NodeKey, frame: Frame) -> None:
        node.inlined = frame.inlined
        node.unresolved = frame.function is None
        if frame.file:
            node.source = frame_source(frame)
            self._sources.setdefault(key, node.source)

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
                HotFunction(*key, counters[0], counters[1], self._sources.get(key, ""))
                for key, counters in self._functions.items()
            ]
            rows.sort(key=_hot_order)
            self._hot_cache = tuple(rows)
        return self._hot_cache if limit is None else self._hot_cache[:limit]
