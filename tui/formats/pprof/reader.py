"""Reading a decoded pprof ``Profile`` back into a ``SavedProfile``.

Samples whose ids dangle (a location, function, mapping or string that does
not exist) are skipped and counted, never raised. The count per sample is
the ``samples`` value when the profile has one, else its first value.
"""

from __future__ import annotations

from bpftop.tui.formats.pprof import KERNEL_LABEL, THREAD_LABEL, PprofError
from bpftop.tui.formats.pprof import profile_pb2 as pb
from bpftop.tui.formats.saved import ProfileMeta, SavedFrame, SavedProfile, SavedStack


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
            name = self.text(function.name)
            frames.append(SavedFrame(
                name, module, kernel, self.text(function.filename), max(0, line.line),
                inlined=depth > 0, unresolved=function.system_name == 0,
            ))  # fmt: skip
        found = self.cache[key] = tuple(frames)
        return found

    def stack(self, sample: pb.Sample, value_index: int) -> SavedStack:
        thread, kernel = "", 0
        for label in sample.label:
            key = self.text(label.key)
            if key == THREAD_LABEL:
                thread = self.text(label.str)
            elif key == KERNEL_LABEL:
                kernel = label.num
        if value_index >= len(sample.value):
            raise _Dangling
        frames: list[SavedFrame] = []
        ids = list(sample.location_id)
        for position, location_id in enumerate(reversed(ids)):
            frames.extend(self.location(location_id, position >= len(ids) - kernel))
        return SavedStack(thread or "[unknown]", tuple(frames), sample.value[value_index])


def from_pprof(profile: pb.Profile) -> SavedProfile:
    """Every readable sample with a positive count; dangling ones counted in ``skipped``."""
    reader = _Reader(profile)
    try:
        types = [reader.text(t.type) for t in profile.sample_type]
        comments = [reader.text(c) for c in profile.comment]
    except _Dangling:
        raise PprofError("a sample type or comment names a string that does not exist") from None
    value_index = types.index("samples") if "samples" in types else 0
    stacks, skipped = [], 0
    for sample in profile.sample:
        try:
            stack = reader.stack(sample, value_index)
        except _Dangling:
            skipped += 1
            continue
        if stack.count > 0:
            stacks.append(stack)
    pairs = [tuple(c.split("=", 1)) for c in comments if "=" in c]
    meta = ProfileMeta.from_items([(p[0], p[1]) for p in pairs])
    return SavedProfile(meta, tuple(stacks), skipped)
