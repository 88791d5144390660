"""Reading a decoded pprof ``Profile`` back into a ``SavedProfile``.

Samples whose ids dangle (a location, function, mapping or string that does
not exist) are skipped and counted, never raised. The count per sample is
the first ``nanoseconds`` value of a profile bpftop wrote for a time probe
(its events per stack, the ``count`` value beside it), else the ``samples``
value when there is one, else the first value. A file
another tool wrote (no ``version=`` comment) says what it is through its
sample types, period, time and duration, which go into ``ProfileMeta``;
stacks without a ``thread`` label are grouped under the main mapping's file
name (as ``go tool pprof`` names a profile).
"""

from __future__ import annotations

import os
from dataclasses import replace

from bpftop.tui.formats.pprof import KERNEL_LABEL, THREAD_LABEL, PprofError
from bpftop.tui.formats.pprof import profile_pb2 as pb
from bpftop.tui.formats.saved import (
    NANOSECONDS,
    ProfileMeta,
    SavedFrame,
    SavedProfile,
    SavedStack,
    python_frame,
)

_NS = f"/{NANOSECONDS}"


class _Dangling(Exception):
    """An id or string index that points nowhere."""


class _Reader:
    def __init__(self, profile: pb.Profile) -> None:
        self.strings = list(profile.string_table)
        self.mappings = {m.id: m for m in profile.mapping}
        self.functions = {f.id: f for f in profile.function}
        self.locations = {loc.id: loc for loc in profile.location}
        self.cache: dict[int, tuple[SavedFrame, ...]] = {}

    def text(self, index: int) -> str:
        if not 0 <= index < len(self.strings):
            raise _Dangling
        return self.strings[index]

    def location(self, location_id: int, kernel: bool) -> tuple[SavedFrame, ...]:
        """The location's frames root-first (the caller, then what was inlined into it)."""
        key = location_id if not kernel else -location_id
        found = self.cache.get(key)
        if found is not None:
            return found
        location = self.locations.get(location_id)
        if location is None or not location.line:
            raise _Dangling
        module = ""
        if location.mapping_id:
            mapping = self.mappings.get(location.mapping_id)
            if mapping is None:
                raise _Dangling
            module = self.text(mapping.filename)
        frames = []
        for depth, line in enumerate(reversed(location.line)):
            function = self.functions.get(line.function_id)
            if function is None:
                raise _Dangling
            name, file, number = self.text(function.name), self.text(function.filename), line.line
            if module and file == module and number > 0 and not kernel:  # a Python function
                frames.append(python_frame(name, module, number, max(0, function.start_line)))
                continue
            frames.append(SavedFrame(
                name, module, kernel, file, max(0, number),
                inlined=depth > 0, unresolved=function.system_name == 0,
            ))  # fmt: skip
        found = self.cache[key] = tuple(frames)
        return found

    def stack(self, sample: pb.Sample, indexes: tuple[int, int | None], group: str) -> SavedStack:
        thread, kernel = "", 0
        for label in sample.label:
            key = self.text(label.key)
            if key == THREAD_LABEL:
                thread = self.text(label.str)
            elif key == KERNEL_LABEL:
                kernel = label.num
        value_index, events_index = indexes
        if value_index >= len(sample.value) or (events_index or 0) >= len(sample.value):
            raise _Dangling
        frames: list[SavedFrame] = []
        ids = list(sample.location_id)
        for position, location_id in enumerate(reversed(ids)):
            frames.extend(self.location(location_id, position >= len(ids) - kernel))
        events = sample.value[events_index] if events_index is not None else 0
        return SavedStack(thread or group, tuple(frames), sample.value[value_index], events)


def _own_meta(profile: pb.Profile, reader: _Reader, types: list[str]) -> ProfileMeta:
    """What a pprof file another tool wrote says about itself."""
    period = ""
    if profile.period and profile.HasField("period_type"):
        kind = profile.period_type
        period = f"{profile.period:,} {reader.text(kind.type)}/{reader.text(kind.unit)}"
    main = profile.mapping[0].filename if profile.mapping else 0
    return ProfileMeta(
        command=reader.text(main) if 0 <= main < len(reader.strings) else "",
        start_ns=max(0, profile.time_nanos),
        end_ns=max(0, profile.time_nanos) + max(0, profile.duration_nanos),
        sample_type=", ".join(types),
        period=period,
        source="pprof",
    )


def _value_index(types: list[str], timed: bool) -> int:
    if timed:
        found = next((i for i, t in enumerate(types) if t.endswith(_NS)), None)
        if found is not None:
            return found
    names = [t.partition("/")[0] for t in types]
    return names.index("samples") if "samples" in names else 0


def _events_index(types: list[str], value_index: int) -> int | None:
    """Where a time profile keeps its events per stack (``calls/count`` beside
    ``wall/nanoseconds``): the first count that is not the value read."""
    counts = (i for i, t in enumerate(types) if t.endswith("/count") and i != value_index)
    return next(counts, None)


def from_pprof(profile: pb.Profile) -> SavedProfile:
    """Every readable sample with a positive count; dangling ones counted in ``skipped``."""
    reader = _Reader(profile)
    try:
        types = [f"{reader.text(t.type)}/{reader.text(t.unit)}" for t in profile.sample_type]
        comments = [reader.text(c) for c in profile.comment]
        pairs = [tuple(c.split("=", 1)) for c in comments if "=" in c]
        meta = ProfileMeta.from_items([(p[0], p[1]) for p in pairs])
        if not meta.version:
            meta = _own_meta(profile, reader, types)
    except _Dangling:
        raise PprofError("a sample type or comment names a string that does not exist") from None
    value_index = _value_index(types, meta.timed)
    if not meta.version and value_index < len(types) and types[value_index].endswith(_NS):
        meta = replace(meta, unit=NANOSECONDS)
    indexes = (value_index, _events_index(types, value_index) if meta.timed else None)
    group = os.path.basename(meta.command) if not meta.version and meta.command else "[unknown]"
    stacks, skipped = [], 0
    for sample in profile.sample:
        try:
            stack = reader.stack(sample, indexes, group)
        except _Dangling:
            skipped += 1
            continue
        if stack.count > 0:
            stacks.append(stack)
    return SavedProfile(meta, tuple(stacks), skipped)
