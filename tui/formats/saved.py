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
from dataclasses import dataclass, fields

from bpftop.symbols.frame import Frame
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode, Snapshot
from bpftop.tui.model.store import LiveNode

_UNNAMED = re.compile(r"(.+)\+0x([0-9a-f]+)")


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

    @property
    def source(self) -> str:
        """``file.c:12`` as ``CallNode.source`` spells it."""
        if not self.file:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True, slots=True)
class SavedStack:
    """``count`` samples of one stack of the group ``thread`` (root-first frames)."""

    thread: str
    frames: tuple[SavedFrame, ...]
    count: int


@dataclass(frozen=True, slots=True)
class ProfileMeta:
    """What a profile is of; every field is optional (0 / "" when unknown).

    Times are wall-clock nanoseconds since the epoch. ``lost_events`` are
    perf-buffer records the kernel could not deliver, ``dropped_samples``
    samples not counted because the in-kernel map was full.
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
    """Stacks and metadata; ``skipped`` counts input records an importer could not use."""

    meta: ProfileMeta
    stacks: tuple[SavedStack, ...]
    skipped: int = 0

    @property
    def total(self) -> int:
        return sum(stack.count for stack in self.stacks)

    def threads(self) -> list[str]:
        """The stack groups in order of first appearance."""
        return list(dict.fromkeys(stack.thread for stack in self.stacks))


def saved_frame(node: CallNode) -> SavedFrame:
    file, _, line = node.source.rpartition(":")
    if not file or not line.isdigit():
        file, line = node.source, "0"
    return SavedFrame(
        node.label, node.module, node.kernel, file, int(line), node.inlined, node.unresolved
    )


def from_tree(tree: CallNode, meta: ProfileMeta) -> SavedProfile:
    """Every node with self samples becomes a stack; the tree's first level are the groups."""
    stacks: list[SavedStack] = []
    frames: dict[tuple[str, str, bool, str, bool, bool], SavedFrame] = {}
    for group in tree.children:
        todo: list[tuple[CallNode, tuple[SavedFrame, ...]]] = [(group, ())]
        while todo:
            node, path = todo.pop()
            if node.self_count > 0 and path:
                stacks.append(SavedStack(group.label, path, node.self_count))
            for child in reversed(_children(node)):
                key = (child.label, child.module, child.kernel, child.source, child.inlined,
                       child.unresolved)  # fmt: skip
                frame = frames.get(key)
                if frame is None:
                    frame = frames[key] = saved_frame(child)
                todo.append((child, (*path, frame)))
    return SavedProfile(meta, tuple(stacks))


def _children(node: CallNode) -> tuple[CallNode, ...]:
    return node.passing_children() if isinstance(node, LiveNode) else node.children


def snapshot_meta(
    snap: Snapshot, *, frequency_hz: int, start_ns: int, end_ns: int, version: str
) -> ProfileMeta:
    """The metadata of a recording that ended with ``snap``."""
    process = snap.process
    return ProfileMeta(
        command=process.cmdline if process is not None else "",
        pids=(process.pid,) if process is not None else (),
        probe=snap.stats.probe,
        frequency_hz=frequency_hz,
        start_ns=start_ns,
        end_ns=end_ns,
        samples=snap.tree.total_count,
        lost_events=snap.stats.lost_events,
        dropped_samples=snap.stats.dropped_samples,
        version=version,
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
    return Frame(saved.name, saved.module, 0, saved.kernel, None, None, saved.inlined, file, line)


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
