"""The live profile: count arrays over a call-tree store, owned by the collector thread.

``Profile.add`` remembers each distinct stack once (its leaf node, once
placed) and otherwise only buffers ``(stack, count)``; the stacks new since
the last read are placed in the store together
(:mod:`bpftop.tui.model.placement`), and the buffered counts applied
together, vectorized, when the profile is next read: each count reaches the
nodes from its leaf up, and the functions of the nodes flagged
``FIRST_OF_FUNCTION`` (and ``FIRST_OF_SYMBOL``: the table grouped by
symbol) on the way. ``tree()`` then freezes the counts into a ``LiveTree``
(two array copies; nodes are made only when a view asks for them) and
``hot_functions()`` ranks the per-function counters, with inline frames as
rows or grouped by symbol as ``views.hot_by_symbol`` groups them: what new
samples cost, not a pass over the tree. Both are cached until the counts change.

Only the collector thread may call into a ``Profile``; the values it returns
are immutable and safe to hand to any thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, repeat

import numpy as np

from bpftop.symbols.frame import Frame
from bpftop.tui.model.count_copies import CountCopies
from bpftop.tui.model.placement import add_up, mark_firsts, place, symbol_owners
from bpftop.tui.model.snapshot import CallNode, HotFunction
from bpftop.tui.model.store import (
    FIRST_OF_FUNCTION,
    FIRST_OF_SYMBOL,
    INLINED,
    ROOT,
    UNRESOLVED,
    Counts,
    LiveTree,
    NodeKey,
    TreeStore,
)

ROOT_LABEL = "all"
MAX_MEMO = 65_536
"""Distinct stacks remembered (more than the collector caches)."""
MAX_PENDING = 100_000
"""Counts buffered before they are applied even if nobody reads the profile."""
MAX_UNPLACED = 4_096
"""New stacks placed together at most (a profile nobody reads places them in batches)."""
MAX_FRAME_KEYS = 500_000
"""Frames whose key id and flags are remembered (by object; the symbolizer shares them)."""


class _Stack:
    """One distinct stack: its leaf node, and its counts."""

    __slots__ = ("count", "frames", "leaf", "process", "symbol")

    def __init__(self, process: str, frames: tuple[Frame, ...]) -> None:
        self.process = process
        self.frames = frames  # kept alive, so its id() is not reused
        self.leaf = -1  # its node, once it is placed in the store
        self.symbol = -1  # the key id its samples count for by symbol (placement.mark_firsts)
        self.count = 0  # samples of it in the profile, pending ones included


def frame_key(frame: Frame) -> NodeKey:
    """The sibling/function identity of a frame."""
    return (frame.label, frame.module, frame.kernel)


def frame_source(frame: Frame) -> str:
    """``file.c:123`` (the file's basename) when DWARF knows it, else ""."""
    if not frame.file:
        return ""
    name = frame.file.rsplit("/", 1)[-1]
    return f"{name}:{frame.line}" if frame.line else name


def _hot_order(fn: HotFunction) -> tuple[int, int, str, str, bool]:
    return (-fn.self_count, -fn.total_count, fn.label, fn.module, fn.kernel)


class Profile:
    """Aggregates stacks into a call tree and a hot-function table.

    Profiles may share one ``TreeStore`` (a time window's profile shares the
    cumulative one's): the shape is common, the counts are each profile's own.
    """

    def __init__(self, store: TreeStore | None = None) -> None:
        self._start(store if store is not None else TreeStore(ROOT_LABEL))

    def _start(self, store: TreeStore) -> None:
        self.store = store
        self._stacks: dict[int, _Stack] = {}
        self._unplaced: list[_Stack] = []  # remembered, not in the store yet
        self._frame_keys: dict[int, int] = {}  # id(frame) -> _packed_key(frame),
        self._kept_frames: list[Frame] = []  # for frames kept alive (their ids stay theirs)
        self._process_keys: dict[str, int] = {}  # process -> its key id << 8
        self._pending: list[_Stack] = []  # stacks with counts not yet applied,
        self._pending_counts: list[int] = []  # and those counts (a stack may repeat)
        self._self: Counts = np.zeros(0, np.int64)
        self._total: Counts = np.zeros(0, np.int64)
        # Per key id: self and total by function ([0]) and by symbol ([1]).
        self._fn_self = [np.zeros(0, np.int64), np.zeros(0, np.int64)]
        self._fn_total = [np.zeros(0, np.int64), np.zeros(0, np.int64)]
        self._fn_source: dict[int, str] = {}
        self._tree: CallNode | None = None
        # The snapshots' counts: of _self (a tick changes its leaves'), of _total.
        self._copies = (CountCopies(tracked=True), CountCopies())
        # Per grouping: the hottest rows, or all of them, and how many there are.
        self._hot: list[tuple[HotFunction, ...] | None] = [None, None]
        self._live_functions = [0, 0]

    @property
    def total_samples(self) -> int:
        self._flush()
        return int(self._total[ROOT]) if len(self._total) else 0

    def reset(self) -> None:
        """Forget everything collected so far, the tree's shape too."""
        self._start(TreeStore(ROOT_LABEL))

    # -- adding ---------------------------------------------------------------
    def add(self, process: str, frames: Sequence[Frame], count: int = 1) -> None:
        """Add ``count`` samples of one stack, ``frames`` root-first, leaf last.

        Pass the same tuple for the same stack (the collector keeps one per
        distinct stack): it is then only counted here and applied in bulk.
        """
        if count <= 0:
            return
        stack = self._stacks.get(id(frames))  # the fast path: one dict lookup
        if stack is None or stack.frames is not frames or stack.process != process:
            stack = self._stack(process, frames)
        self._buffer(stack, count)

    def remove(self, process: str, frames: Sequence[Frame], count: int = 1) -> None:
        """Take back ``count`` samples of a stack added before (a sliding window's tail);
        at most as many as there are. Nodes and functions left with no samples
        disappear from the tree and the table."""
        stack = self._stack(process, frames)
        if stack.leaf < 0:
            self._place()  # its count starts from its leaf's
        count = min(count, stack.count)
        if count > 0:
            self._buffer(stack, -count)

    def _stack(self, process: str, frames: Sequence[Frame]) -> _Stack:
        kept = frames if isinstance(frames, tuple) else tuple(frames)
        stack = self._stacks.get(id(kept))
        if stack is None or stack.frames is not kept or stack.process != process:
            if stack is not None:
                self._flush()  # a replaced stack's pending count is its own
            stack = self._remember(process, kept)
        return stack

    def _buffer(self, stack: _Stack, count: int) -> None:
        stack.count += count
        self._pending.append(stack)
        self._pending_counts.append(count)
        self._tree = None
        self._hot = [None, None]
        if len(self._pending) >= MAX_PENDING:
            self._flush()  # a profile nobody reads (the cumulative one, in window mode)

    def _remember(self, process: str, frames: tuple[Frame, ...]) -> _Stack:
        """A new stack, placed in the store with the others at the next flush."""
        if len(self._stacks) >= MAX_MEMO:
            self._flush()  # pending counts refer to remembered stacks
            self._stacks.clear()
        stack = self._stacks[id(frames)] = _Stack(process, frames)
        self._unplaced.append(stack)
        if len(self._unplaced) >= MAX_UNPLACED:
            self._place()  # bounds the batch's temporary arrays
        return stack

    def _place(self) -> None:
        """Insert the paths of the stacks remembered since the last flush, all at
        once: one store lookup per depth for all of them (new nodes get flags)."""
        new, self._unplaced = self._unplaced, []
        if not new:
            return
        store = self.store
        lengths = np.fromiter((len(stack.frames) + 1 for stack in new), np.int64, len(new))
        ids = self._packed_keys(new, lengths)
        key_ids = (ids >> 8).astype(np.int32)
        node_flags = (ids & _NODE_FLAGS).astype(np.uint8)
        starts = np.cumsum(lengths) - lengths
        size = store.size
        nodes = place(store, key_ids, node_flags, starts, lengths)
        # Marks follow the tree's flags: a node keeps those of the first frame
        # placed there (a function inlined at one call and called at another).
        flags = store.flags[nodes]
        symbols = mark_firsts(key_ids, flags, starts, lengths).tolist()
        made = nodes >= size
        store.flags[nodes[made]] = flags[made]  # new rows only: no snapshot reads them yet
        for position in np.flatnonzero(ids & _HAS_FILE).tolist():  # while file:line is shown
            node = int(nodes[position])
            if node not in store.sources:  # an old node takes file:line once lines are on
                n = int(np.searchsorted(starts, position, side="right")) - 1
                frame = new[n].frames[position - int(starts[n]) - 1]
                store.sources[node] = source = frame_source(frame)
                self._fn_source.setdefault(int(key_ids[position]), source)
        self._fit()
        leaves = nodes[starts + lengths - 1]
        # Seen before under another tuple, or forgotten: its samples are the leaf's.
        for stack, leaf, prior, symbol in zip(
            new, leaves.tolist(), self._self[leaves].tolist(), symbols, strict=True
        ):
            stack.leaf = leaf
            stack.count += prior
            stack.symbol = symbol

    def _packed_keys(self, new: list[_Stack], lengths: Counts) -> Counts:
        """Key id << 8 | flags of each position of ``new`` (process first), laid
        one after another: a frame's is looked up by object, in C (``map``), and
        made in Python only the first time it is seen."""
        known, kept = self._frame_keys, self._kept_frames
        if len(known) > MAX_FRAME_KEYS:
            known.clear()
            kept.clear()  # only now may the ids of the frames kept be reused
        frames = list(chain.from_iterable(stack.frames for stack in new))
        packed = np.fromiter(map(known.get, map(id, frames), repeat(-1)), np.int64, len(frames))
        for at in np.flatnonzero(packed < 0).tolist():  # frames not seen yet
            frame = frames[at]
            found = known.get(id(frame))
            if found is None:
                found = known[id(frame)] = _packed_key(self.store, frame)
                kept.append(frame)
            packed[at] = found
        processes = self._process_keys
        for stack in new:
            if stack.process not in processes:
                processes[stack.process] = self.store.key_of((stack.process, "", False)) << 8
        ids = np.empty(len(frames) + len(new), np.int64)
        is_process = np.zeros(len(ids), np.bool_)
        is_process[np.cumsum(lengths) - lengths] = True
        ids[is_process] = np.fromiter(
            (processes[stack.process] for stack in new), np.int64, len(new)
        )
        ids[~is_process] = packed
        return ids

    def _flush(self) -> None:
        """Place new stacks, then apply the buffered counts: summed per leaf,
        then added to the leaves' self counts and up their paths."""
        self._place()
        self._fit()
        if not self._pending:
            return
        pending = self._pending
        leaves = np.fromiter((stack.leaf for stack in pending), np.int32, len(pending))
        symbols = np.fromiter((stack.symbol for stack in pending), np.int32, len(pending))
        counts = np.array(self._pending_counts, np.int64)
        self._pending, self._pending_counts = [], []
        # A stack of many ticks: once.
        leaves, first, at = np.unique(leaves, return_index=True, return_inverse=True)
        summed = np.zeros(len(leaves), np.int64)
        np.add.at(summed, at.reshape(-1), counts)
        symbols = symbols[first]
        store = self.store
        self._self[leaves] += summed  # leaves distinct
        self._copies[0].changed(leaves)
        framed = symbols >= 0  # a stack of no frames counts no function
        np.add.at(self._fn_self[0], store.key_id[leaves[framed]], summed[framed])
        np.add.at(self._fn_self[1], symbols[framed], summed[framed])
        by_function, by_symbol = self._fn_total
        add_up(store, leaves.astype(np.int32), summed, self._total, by_function, by_symbol)

    def _fit(self) -> None:
        """Grow the count arrays to the store's (shared stores grow under us)."""
        nodes, keys = self.store.capacity, len(self.store.keys)
        if len(self._total) < nodes:
            self._total = _grown(self._total, nodes)
            self._self = _grown(self._self, nodes)
        if len(self._fn_total[0]) < keys:
            self._fn_total = [_grown(counts, keys * 2) for counts in self._fn_total]
            self._fn_self = [_grown(counts, keys * 2) for counts in self._fn_self]

    # -- decay ------------------------------------------------------------------
    def halve(self) -> None:
        """Halve every node's self count (rounding down) and recount totals and
        functions from them: one step of decay. Emptied nodes disappear."""
        self._flush()
        store = self.store
        size = store.size
        self._self[:size] //= 2
        total = self._self.copy()
        parent = store.parent
        for level in reversed(store.levels()[1:]):
            np.add.at(total, parent[level], total[level])
        self._total = total
        self._copies[0].all_changed()
        depth, flags, key_id = store.depth[:size], store.flags[:size], store.key_id[:size]
        frames = depth >= 2
        owners = symbol_owners(store.parent[:size], depth, flags)
        for grouping, owner_key, flag in (
            (0, key_id, FIRST_OF_FUNCTION), (1, key_id[owners], FIRST_OF_SYMBOL)
        ):  # fmt: skip
            self._fn_self[grouping][:] = 0
            np.add.at(self._fn_self[grouping], owner_key[frames], self._self[:size][frames])
            first = (flags & flag) != 0
            self._fn_total[grouping][:] = 0
            np.add.at(self._fn_total[grouping], key_id[first], total[:size][first])
        self._tree = None
        self._hot = [None, None]

    # -- reading --------------------------------------------------------------
    def tree(self, last: bool = False) -> CallNode:
        """The immutable call tree: "all" -> processes -> outermost frames -> ...
        ``last``: nothing will be added to this profile after (see LiveTree.freeze)."""
        if self._tree is None:
            self._flush()
            own, total, size = self._self, self._total, self.store.size
            if not last:  # the profile goes on counting: copies
                own, total = self._copies[0].copy(own, size), self._copies[1].copy(total, size)
            self._tree = LiveTree.freeze(self.store, own, total).root()
        return self._tree

    def hot_functions(
        self, limit: int | None = None, *, by_symbol: bool = False
    ) -> tuple[HotFunction, ...]:
        """Functions by self samples (then total, then label), hottest first.
        ``by_symbol``: grouped as ``views.hot_by_symbol`` groups the tree (an
        inline frame's samples count for the function it was inlined into);
        else inline frames are rows of their own.

        Only the rows asked for are made: numpy ranks by the counts, Python
        breaks ties by name among those (and whatever ties with the last)."""
        grouping = int(by_symbol)
        hot = self._hot[grouping]
        if hot is None or (
            len(hot) < self._live_functions[grouping] and (limit or len(hot) + 1) > len(hot)
        ):
            self._flush()
            self._hot[grouping] = hot = self._rank(limit, grouping)
        return hot if limit is None else hot[:limit]

    def _rank(self, limit: int | None, grouping: int) -> tuple[HotFunction, ...]:
        live = np.flatnonzero(self._fn_total[grouping] > 0)
        self._live_functions[grouping] = len(live)
        selfs, totals = self._fn_self[grouping][live], self._fn_total[grouping][live]
        order = np.lexsort((-totals, -selfs))
        if limit is not None and limit < len(order):
            last = order[limit - 1]
            tied = (selfs[order] == selfs[last]) & (totals[order] == totals[last])
            order = order[: max(limit, int(np.flatnonzero(tied)[-1]) + 1)]
        keys, sources = self.store.keys, self._fn_source
        rows = []
        for key, own, total in zip(
            live[order].tolist(), selfs[order].tolist(), totals[order].tolist(), strict=True
        ):
            label, module, kernel = keys[key]
            rows.append(HotFunction(label, module, kernel, own, total, sources.get(key, "")))
        rows.sort(key=_hot_order)
        return tuple(rows)


_HAS_FILE = 0x80  # a frame with a file (file:line shown): not a node flag
_NODE_FLAGS = INLINED | UNRESOLVED


def _packed_key(store: TreeStore, frame: Frame) -> int:
    """A frame's key id << 8 | its node flags (and _HAS_FILE)."""
    bits = (INLINED if frame.inlined else 0) | (UNRESOLVED if frame.function is None else 0)
    key = frame_key(frame)
    if frame.start_line is not None:  # once per distinct frame: the function's first line
        store.start_lines.setdefault(key, frame.start_line)
    return store.key_of(key) << 8 | bits | (_HAS_FILE if frame.file else 0)


def _grown(counts: Counts, size: int) -> Counts:
    grown = np.zeros(size, np.int64)
    grown[: len(counts)] = counts
    return grown
