"""A saved profile in no particular file format: stacks with counts, plus metadata.

``SavedProfile`` is what every exporter writes and every importer reads
(folded, speedscope JSON, pprof, SVG): root-first stacks of ``SavedFrame``
with a sample count, grouped by the tree's second level (the process or
thread the stacks belong to), and ``ProfileMeta`` (command, pids, probe,
frequency, start/end time, samples, what was lost, bpftop version).
``from_tree`` makes one from a snapshot's call tree; ``to_profile`` turns
one back into a live ``Profile`` through ``Profile.add``. No Textual, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace

import numpy as np
import numpy.typing as npt

from bpftop.bpf.probes import ProbeSpecError, parse_spec
from bpftop.symbols.frame import Frame
from bpftop.symbols.python.code import python_label, python_qualname
from bpftop.tui.model.array_tree import ancestors, array_tree
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode, Snapshot
from bpftop.tui.model.store import INLINED, UNRESOLVED, LiveTree, NodeKey

_UNNAMED = re.compile(r"(.+)\+0x([0-9a-f]+)")

MAX_FRAMES = 512
"""Deeper stacks are cut on read (no profiler bpftop meets writes deeper ones;
a 100,000-frame line would make every view quadratic)."""
CUT_FRAME = "[deeper frames cut]"
"""The frame that ends a stack cut at ``MAX_FRAMES`` (its samples stay counted)."""
NANOSECONDS = "nanoseconds"


@dataclass(frozen=True, slots=True)
class SavedFrame:
    """One frame as files keep it: its label and what else is known about it."""

    name: str
    module: str = ""
    kernel: bool = False
    file: str = ""  # source file (basename) where DWARF knew it
    line: int = 0  # 0: unknown
    inlined: bool = False
    unresolved: bool = False
    start_line: int = 0  # a Python function's first line (0: unknown)

    @property
    def source(self) -> str:
        """``file.c:12`` as ``CallNode.source`` spells it."""
        if not self.file:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True, slots=True)
class SavedStack:
    """``count`` samples of one stack of the group ``thread`` (root-first frames);
    for a time probe, whose ``count`` is nanoseconds, ``events`` are the calls or
    blocks behind them (0: not known)."""

    thread: str
    frames: tuple[SavedFrame, ...]
    count: int
    events: int = 0


@dataclass(frozen=True, slots=True)
class ProfileMeta:
    """What a profile is of; every field is optional (0 / "" when unknown).

    Times are wall-clock nanoseconds since the epoch. ``lost_events`` are
    perf-buffer records the kernel could not deliver, ``dropped_samples``
    samples not counted because the in-kernel map was full. ``unit`` is what
    one count is ("": one sample or event; ``NANOSECONDS``: time).
    ``sample_type``, ``period`` and ``source`` say what another tool's file
    says about itself (pprof: ``cpu/nanoseconds``, ``10000000 cpu/nanoseconds``;
    speedscope: its name and exporter).
    """

    command: str = ""
    pids: tuple[int, ...] = ()
    probe: str = ""
    frequency_hz: int = 0
    start_ns: int = 0
    end_ns: int = 0
    samples: int = 0
    lost_events: int = 0
    dropped_samples: int = 0
    version: str = ""
    unit: str = ""
    sample_type: str = ""
    period: str = ""
    source: str = ""

    @property
    def timed(self) -> bool:
        """True when a count is nanoseconds of time, not a number of samples or events
        (the unit says so, or the probe is one that weighs stacks by time)."""
        if self.unit == NANOSECONDS:
            return True
        try:
            return bool(self.probe) and parse_spec(self.probe).weighted
        except ProbeSpecError:
            return False

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)

    def items(self) -> list[tuple[str, str]]:
        """The known fields as (name, text) pairs, for formats with free-text comments."""
        pairs = []
        for spec in fields(self):
            value = getattr(self, spec.name)
            if value in ("", 0, ()):
                continue
            text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
            pairs.append((spec.name, text.replace("\n", " ")))
        return pairs

    @classmethod
    def from_items(cls, pairs: Iterator[tuple[str, str]] | list[tuple[str, str]]) -> ProfileMeta:
        """The inverse of ``items``; unknown names and unparsable values are ignored."""
        known = {spec.name: spec.type for spec in fields(cls)}
        values: dict[str, object] = {}
        for name, text in pairs:
            kind = known.get(name)
            try:
                if kind == "str":
                    values[name] = text
                elif kind == "int":
                    values[name] = int(text)
                elif kind is not None:
                    values[name] = tuple(int(p) for p in text.split(",") if p)
            except ValueError:
                continue
        return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class SavedProfile:
    """Stacks and metadata; ``skipped`` counts input records an importer could not use,
    ``truncated`` the stacks it cut at ``MAX_FRAMES``."""

    meta: ProfileMeta
    stacks: tuple[SavedStack, ...]
    skipped: int = 0
    truncated: int = 0

    @property
    def total(self) -> int:
        return sum(stack.count for stack in self.stacks)

    def threads(self) -> list[str]:
        """The stack groups in order of first appearance."""
        return list(dict.fromkeys(stack.thread for stack in self.stacks))


@dataclass(frozen=True, slots=True)
class LoadedTree:
    """What the app needs of a saved profile: its metadata, call tree, what was
    skipped (unreadable lines or samples) and how many stacks were cut at ``MAX_FRAMES``."""

    meta: ProfileMeta
    tree: CallNode
    skipped: int
    truncated: int = 0
    events: int = 0
    """A time probe's events (calls, blocks) per stack, summed (0: none in the file)."""


def python_function(frame: SavedFrame) -> str | None:
    """A Python frame's function (bpftop names it ``QUALNAME (FILE:LINE)``, its
    module FILE): what formats that keep the function, file and line apart
    store as its name. None for any other frame."""
    return None if frame.kernel else python_qualname(frame.name, frame.module, frame.line)


def python_frame(function: str, path: str, line: int, start_line: int = 0) -> SavedFrame:
    """The frame ``python_function`` took apart, from its function, source path and
    line (and its function's first line, when known)."""
    return SavedFrame(
        python_label(function, path, line), path, file=path.rsplit("/", 1)[-1], line=line,
        start_line=start_line,
    )  # fmt: skip


def cap_depth(saved: SavedProfile, max_frames: int = MAX_FRAMES) -> SavedProfile:
    """``saved`` with stacks deeper than ``max_frames`` cut, the last frame ``CUT_FRAME``."""
    if all(len(stack.frames) <= max_frames for stack in saved.stacks):
        return saved
    cut_frame = SavedFrame(CUT_FRAME)
    stacks, cut = [], 0
    for stack in saved.stacks:
        if len(stack.frames) > max_frames:
            frames = (*stack.frames[: max_frames - 1], cut_frame)
            stack, cut = replace(stack, frames=frames), cut + 1
        stacks.append(stack)
    return replace(saved, stacks=tuple(stacks), truncated=saved.truncated + cut)


def _saved_frame(key: NodeKey, flags: int, source: str, start_line: int) -> SavedFrame:
    label, module, kernel = key
    file, _, line = source.rpartition(":")
    if not file or not line.isdigit():
        file, line = source, "0"
    inlined, unresolved = bool(flags & INLINED), bool(flags & UNRESOLVED)
    return SavedFrame(label, module, kernel, file, int(line), inlined, unresolved, start_line)


def from_tree(tree: CallNode, meta: ProfileMeta, events: CallNode | None = None) -> SavedProfile:
    """Every node with self samples becomes a stack; the tree's first level are the groups.
    ``events``: a time probe's hits per stack, as a tree of the same stacks; each
    stack's ``events`` are read from it."""
    saved = _from_tree(tree, meta)
    if events is None:
        return saved
    hits = {(stack.thread, stack.frames): stack.count for stack in _from_tree(events, meta).stacks}
    stacks = (replace(s, events=hits.get((s.thread, s.frames), 0)) for s in saved.stacks)
    return replace(saved, stacks=tuple(stacks))


def _from_tree(tree: CallNode, meta: ProfileMeta) -> SavedProfile:
    """Every stack of ``tree_stacks``, collected."""
    return SavedProfile(meta, tuple(tree_stacks(tree)))


def tree_stacks(tree: CallNode) -> Iterator[SavedStack]:
    """Every node with self samples as a stack, read from the tree's arrays
    ``CHUNK`` stacks at a time, groups hottest first and each group's stacks
    in the order they were first seen: each distinct frame (key, inline and
    unnamed flags, file:line) is made once. Made node by node, the 1.7
    million nodes of 40,000 stacks of depth ~44 took 6.1 CPU-s; this takes
    0.5 (bench.model_scale --write). Streamed (the folded writer), only one
    chunk's stacks are alive at a time."""
    live = array_tree(tree)
    nodes = np.flatnonzero((live.self_count > 0) & (live.depth >= 2))
    tops = nodes.astype(np.int32)  # each stack's group (depth 1)
    while (deeper := live.depth[tops] > 1).any():
        tops[deeper] = live.parent[tops[deeper]]
    rank = {live.key_ids[g.key]: n for n, g in enumerate(tree.children)}
    ranks = np.fromiter((rank.get(k, len(rank)) for k in live.key_id[tops].tolist()), np.int64)
    nodes = nodes[np.argsort(ranks, kind="stable")]
    del tops, ranks
    frames = _FrameTable(live)
    for at in range(0, len(nodes), CHUNK):
        chunk = nodes[at : at + CHUNK]
        cells = ancestors(live, chunk)  # root, group, then the frames; -1 past the end
        groups = [live.keys[k][0] for k in live.key_id[cells[:, 1]].tolist()]
        rows = frames.of(cells[:, 2:]).tolist()
        counts = live.self_count[chunk].tolist()
        del cells
        for group, row, count in zip(groups, rows, counts, strict=True):
            yield SavedStack(group, tuple(frames.made[i] for i in row if i >= 0), count)


CHUNK = 512
"""Stacks read from the arrays at a time (their node-id matrix: 240 KB at depth
60). Streaming folded text of 40,000 stacks of depth ~44 peaked at +22 MiB
with chunks of 4096 (its temporaries of ~2 MB each, many, left the heap
fragmented), +7 with 1024, +3 with 512, at the same CPU (bench.model_scale
--write)."""


class _FrameTable:
    """The ``SavedFrame`` of a tree's nodes, one per distinct frame: a node's
    frame is told by its key id, its inline and unnamed flags and its file:line."""

    def __init__(self, live: LiveTree) -> None:
        self._live = live
        self._texts = ["", *dict.fromkeys(live.sources.values())]  # id 0: no file:line
        text_ids = {text: n for n, text in enumerate(self._texts)}
        self._source_of = np.zeros(live.size, np.int32)
        for node, text in live.sources.items():
            if node < live.size:
                self._source_of[node] = text_ids[text]
        self._index: dict[int, int] = {}  # frame code -> index in ``made``
        self.made: list[SavedFrame] = []

    def of(self, cells: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The frame of each node id in ``cells`` (-1 stays -1)."""
        live, width = self._live, len(self._texts)
        ids = np.maximum(cells, 0)
        key = live.key_id[ids].astype(np.int64) * 4 + (live.flags[ids] & (INLINED | UNRESOLVED))
        codes, inverse = np.unique(key * width + self._source_of[ids], return_inverse=True)
        index = np.fromiter((self._frame(c) for c in codes.tolist()), np.int64, len(codes))
        return np.where(cells >= 0, index[inverse.reshape(cells.shape)], -1)

    def _frame(self, code: int) -> int:
        found = self._index.get(code)
        if found is None:
            found = self._index[code] = len(self.made)
            key, source = divmod(code, len(self._texts))
            node_key = self._live.keys[key // 4]
            start = self._live.start_lines.get(node_key, 0)
            self.made.append(_saved_frame(node_key, key % 4, self._texts[source], start))
        return found


def snapshot_meta(
    snap: Snapshot, *, frequency_hz: int, start_ns: int, end_ns: int, version: str
) -> ProfileMeta:
    """The metadata of a recording that ended with ``snap``; a time probe's
    ``samples`` are the events it saw (calls, blocks), its counts nanoseconds."""
    process = snap.process
    timed = bool(snap.weight_unit)
    try:
        spec = parse_spec(snap.stats.probe)
        if spec.is_profile:
            frequency_hz = spec.number  # the probe's own rate, whatever -F said
    except ProbeSpecError:
        pass
    return ProfileMeta(
        command=process.cmdline if process is not None else "",
        pids=(process.pid,) if process is not None else (),
        probe=snap.stats.probe,
        frequency_hz=frequency_hz,
        start_ns=start_ns,
        end_ns=end_ns,
        samples=snap.probe_events if timed else snap.tree.total_count,
        lost_events=snap.stats.lost_events,
        dropped_samples=snap.stats.dropped_samples,
        version=version,
        unit=NANOSECONDS if timed else "",
    )


def to_frame(saved: SavedFrame) -> Frame:
    """A symbols ``Frame`` whose label, module and kind are the saved ones."""
    file = saved.file or None
    line = saved.line or None
    if saved.unresolved:
        found = _UNNAMED.fullmatch(saved.name)
        unnamed = Frame(None, saved.module, 0, saved.kernel)
        if saved.name == unnamed.label:
            return unnamed
        if found is not None and found.group(1) == unnamed.module_name:
            return Frame(None, saved.module, int(found.group(2), 16), saved.kernel)
    start = saved.start_line or None
    return Frame(
        saved.name, saved.module, 0, saved.kernel, None, None, saved.inlined, file, line, start
    )


def to_profile(saved: SavedProfile) -> Profile:
    """A ``Profile`` holding the saved stacks (frames converted once each)."""
    profile = Profile()
    frames: dict[SavedFrame, Frame] = {}
    for stack in saved.stacks:
        path = []  # a list: Profile only memoizes tuples, and these come once each
        for frame in stack.frames:
            converted = frames.get(frame)
            if converted is None:
                converted = frames[frame] = to_frame(frame)
            path.append(converted)
        profile.add(stack.thread, path, stack.count)
    return profile
