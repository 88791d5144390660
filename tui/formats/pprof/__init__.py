"""pprof's profile.proto to and from a ``SavedProfile``.

``profile.proto`` here is written from the format's documentation;
``profile_pb2`` is generated from it (``scripts/gen_proto.sh``) and kept in
the repository, so an installed bpftop needs the ``protobuf`` runtime only.

What goes where: the sample types of the probe (``measures``): CPU
sampling ``samples/count`` + ``cpu/nanoseconds`` (period: the probe's own
1e9/Hz); event probes their event (``calls/count``, ``hits/count``, a
software event's name; with ``samples/count`` first when a sample stands for
a period of events); time probes their events and their time,
``calls/count`` + ``wall/nanoseconds`` (uretprobe) or ``blocks/count`` +
``off-cpu/nanoseconds`` (offcpu; the time alone when the events per stack
are not known), all events in ``samples=``; one mapping per module with its
build-id when the caller knows it; one function per named frame
(``system_name`` empty for a frame that could not be named; a Python frame's
function is its ``QUALNAME`` in its source file with its first line as
``start_line`` (``co_firstlineno``), the line on its location,
as Go's and py-spy's pprof files have them); one location
per physical frame, whose lines hold the frames DWARF inlined into it
(caller last). Per sample, a ``thread`` label names the stack's group and a
numeric ``kernel_frames`` label says how many leaf-most locations are kernel
frames. The metadata goes into comments as ``name=value``.
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping

from google.protobuf.message import DecodeError

from bpftop.tui.formats.measures import Measure, measure_of
from bpftop.tui.formats.pprof import profile_pb2 as pb
from bpftop.tui.formats.registry import Fill, FormatError, WholeProfileCodec
from bpftop.tui.formats.saved import (
    NANOSECONDS,
    SavedFrame,
    SavedProfile,
    python_function,
)

THREAD_LABEL = "thread"
KERNEL_LABEL = "kernel_frames"


class PprofError(FormatError):
    """The bytes are not a pprof profile bpftop can read."""


class _Strings:
    def __init__(self, table: pb.Profile) -> None:
        self._table = table
        self._index: dict[str, int] = {}
        self.of("")

    def of(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self._index)
            self._table.string_table.append(text)
        return found


def _runs(frames: tuple[SavedFrame, ...]) -> list[tuple[SavedFrame, ...]]:
    """Root-first frames cut into physical frames: each with the frames inlined into it."""
    runs: list[list[SavedFrame]] = []
    for frame in frames:
        if frame.inlined and runs and runs[-1][0].kernel == frame.kernel:
            runs[-1].append(frame)
        else:
            runs.append([frame])
    return [tuple(run) for run in runs]


class _Writer:
    def __init__(self, build_ids: Mapping[str, str]) -> None:
        self.out = pb.Profile()
        self.strings = _Strings(self.out)
        self.build_ids = build_ids
        self.mappings: dict[str, int] = {}
        self.functions: dict[tuple[str, str, bool], int] = {}
        self.locations: dict[tuple[SavedFrame, ...], int] = {}

    def mapping(self, module: str) -> int:
        found = self.mappings.get(module)
        if found is None:
            found = self.mappings[module] = len(self.mappings) + 1
            self.out.mapping.add(
                id=found, filename=self.strings.of(module),
                build_id=self.strings.of(self.build_ids.get(module, "")),
                has_functions=True, has_filenames=True, has_line_numbers=True,
                has_inline_frames=True,
            )  # fmt: skip
        return found

    def function(self, frame: SavedFrame) -> int:
        python = python_function(frame)
        function, file = (python, frame.module) if python is not None else (frame.name, frame.file)
        key = (function, file, frame.unresolved)
        found = self.functions.get(key)
        if found is None:
            found = self.functions[key] = len(self.functions) + 1
            name = self.strings.of(function)
            self.out.function.add(
                id=found, name=name, system_name=0 if frame.unresolved else name,
                filename=self.strings.of(file), start_line=frame.start_line,
            )  # fmt: skip
        return found

    def location(self, run: tuple[SavedFrame, ...]) -> int:
        found = self.locations.get(run)
        if found is None:
            found = self.locations[run] = len(self.locations) + 1
            location = self.out.location.add(id=found)
            if run[0].module:
                location.mapping_id = self.mapping(run[0].module)
            for frame in reversed(run):
                location.line.add(function_id=self.function(frame), line=frame.line)
        return found


def _sample_types(out: pb.Profile, strings: _Strings, measure: Measure, events: bool) -> list[int]:
    """Declare the sample types and period of ``measure``; each value's factor per count
    (``events``: a time probe's first value is its stack's events, not a count)."""
    types: list[tuple[str, str, int]] = []
    if measure.cpu_ns:
        types = [("samples", "count", 1), (measure.time, NANOSECONDS, measure.cpu_ns)]
    elif measure.timed:
        types = [(measure.event, "count", 0)] if events else []
        types.append((measure.time, NANOSECONDS, 1))
    elif measure.period > 1:
        types = [("samples", "count", 1), (measure.event, "count", measure.period)]
    else:
        types = [(measure.event, "count", 1)]
    for kind, unit, _ in types:
        out.sample_type.add(type=strings.of(kind), unit=strings.of(unit))
    kind, unit, factor = types[-1]
    out.period_type.type, out.period_type.unit = strings.of(kind), strings.of(unit)
    out.period = factor
    return [factor for _, _, factor in types]


def to_pprof(saved: SavedProfile, build_ids: Mapping[str, str] | None = None) -> bytes:
    """The gzip-compressed profile (``.pb.gz``)."""
    writer = _Writer(build_ids or {})
    out, strings, meta = writer.out, writer.strings, saved.meta
    measure = measure_of(meta)
    events = measure.timed and any(stack.events for stack in saved.stacks)
    factors = _sample_types(out, strings, measure, events)
    out.time_nanos, out.duration_nanos = meta.start_ns, meta.duration_ns
    thread_key, kernel_key = strings.of(THREAD_LABEL), strings.of(KERNEL_LABEL)
    for stack in saved.stacks:
        runs = _runs(stack.frames)
        sample = out.sample.add(location_id=[writer.location(run) for run in reversed(runs)])
        sample.value.extend(stack.count * factor if factor else stack.events for factor in factors)
        sample.label.add(key=thread_key, str=strings.of(stack.thread))
        kernel = sum(1 for run in runs if run[0].kernel)
        if kernel:
            sample.label.add(key=kernel_key, num=kernel)
    out.comment.extend(strings.of(f"{name}={text}") for name, text in meta.items())
    return gzip.compress(out.SerializeToString(), mtime=0)


def parse_pprof(data: bytes) -> pb.Profile:
    """Decode (gunzipped) profile bytes; a clear ``PprofError`` when they are not one."""
    out = pb.Profile()
    try:
        out.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as err:
        raise PprofError(f"not a pprof profile ({err})") from None
    if not out.string_table or out.string_table[0] != "":
        raise PprofError("not a pprof profile (its string table does not start with '')")
    return out


class PprofCodec(WholeProfileCodec):
    """gzip-compressed ``profile.proto``, with each mapping's build-id when known."""

    def writer(self, saved: SavedProfile, build_ids: Mapping[str, str]) -> Fill:
        data = to_pprof(saved, build_ids)
        return lambda out: out.write(data)

    def read(self, payload: bytes | str) -> SavedProfile:
        from bpftop.tui.formats.pprof.reader import from_pprof  # it imports this module

        if isinstance(payload, str):
            raise PprofError("not a pprof profile (text, not protobuf)")
        return from_pprof(parse_pprof(payload))


CODEC = PprofCodec()
