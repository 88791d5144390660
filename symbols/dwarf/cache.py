"""What :class:`~bpftop.symbols.dwarf.index.DwarfIndex` learns of a file, kept on disk.

Owns :class:`DwarfCache` and :class:`DwarfEntry`. Opening libc's separate debug
file with pyelftools cost the live view's first tick 0.12-0.19 s of GIL-held
Python (profiled: ``get_dwarf_info`` 0.07 s, as it decompresses every
``.debug_*`` section; the CU index 0.035 s; the 2-3 units hit 0.025 s), and
a second run did all of it again. Here the CU index and, per compile unit
built, its subprogram ranges and inline ranges are stored in
``<symbol cache dir>/<build-id>-<size>.dwarf`` (the key
:mod:`bpftop.symbols.elf.disk_cache` uses, of the DWARF file itself), so a later
run answers ``has_dwarf`` and those units' inline chains without opening the
file. Units not stored are built as before and added to the entry.
``bench/symbols_bench.py``: the inline chains of 30 random libc functions
(30 units) took 213 ms cold and 1.0 ms from the cache; writing the entry
took 0.55 ms at 44 units (54 KiB), 2.2 ms at 280 units (199 KiB), reading
the latter 1.7 ms.

Entries are ``marshal`` data (tuples and lists of ints, strings and None:
loading runs no code), checked field by field: the CU index when the entry is
read, each unit when it is first asked for. A broken entry (or unit) is
removed, never trusted. The entry is rewritten when units are added: at once
while it holds at most :data:`EAGER_UNITS` (a first run's first tick is saved),
then at most every :data:`SAVE_INTERVAL_S` (checked as addresses are looked
up; units added in the last seconds before exit may be lost: they are built
again next time). Used from one thread; nothing here raises.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import IO, Any, TypeGuard

from bpftop.symbols.dwarf.index import Inline, InlineFrame, Unit
from bpftop.symbols.elf.disk_cache import EntryStore, file_key, stream_key

FORMAT_VERSION = 1
SUFFIX = ".dwarf"
DEFAULT_MAX_ENTRIES = 500
EAGER_UNITS = 16
SAVE_INTERVAL_S = 5.0
MAX_STORED_UNITS = 4096
MAX_OPEN_ENTRIES = 64

CuIndex = tuple[list[int], list[int], list[int]]
# A unit on disk: (sub_lows, sub_highs, group per subprogram range, groups of
# (low, high, depth, frame number), frames (function, mangled, call_file, call_line)).
RawFrame = tuple[str, str | None, str | None, int | None]
RawInline = tuple[int, int, int, int]
RawUnit = tuple[list[int], list[int], list[int], list[list[RawInline]], list[RawFrame]]


class DwarfCache:
    """Entries of DWARF files stored by build-id and size in one folder (None: off)."""

    def __init__(
        self,
        directory: str | None,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = directory
        self._store = None if directory is None else EntryStore(directory, SUFFIX, max_entries)
        self.clock = clock
        self._entries: OrderedDict[tuple[str, int], DwarfEntry] = OrderedDict()
        self.hits = 0  # entries read from disk
        self.writes = 0

    def entry(self, path: str) -> DwarfEntry | None:
        """The entry of the file at ``path`` (what is stored of it, maybe nothing
        yet), or None: no cache, no build-id, or the file cannot be read."""
        store = self._store
        key = file_key(path) if store is not None else None
        if store is None or key is None:
            return None
        build_id, size = key
        found = self._entries.get(key)
        if found is None:
            found = self._entries[key] = DwarfEntry(self, build_id, size)
            raw = store.read(build_id, size)
            if raw is not None:
                if found.load(raw):
                    self.hits += 1
                else:
                    store.remove(build_id, size)
            while len(self._entries) > MAX_OPEN_ENTRIES:
                self._entries.popitem(last=False)[1].flush()
        self._entries.move_to_end(key)
        return found

    def save(self, entry: DwarfEntry, value: dict[str, Any]) -> None:
        if self._store is not None and self._store.write(entry.build_id, entry.size, value):
            self.writes += 1

    def remove(self, entry: DwarfEntry) -> None:
        if self._store is not None:
            self._store.remove(entry.build_id, entry.size)


class DwarfEntry:
    """What is known of one DWARF file: its CU index (None until known) and
    its units, as stored (decoded when asked for)."""

    def __init__(self, cache: DwarfCache, build_id: str, size: int) -> None:
        self._cache = cache
        self.build_id = build_id
        self.size = size
        self.cu: CuIndex | None = None
        self._units: dict[int, Any] = {}  # CU offset -> RawUnit (checked when decoded)
        self.dirty = False
        self._saved_at = -math.inf

    def __len__(self) -> int:
        return len(self._units)

    def describes(self, stream: IO[bytes]) -> bool:
        """True when the open file is the one this entry is about."""
        try:
            return stream_key(stream) == (self.build_id, self.size)
        except OSError:
            return False

    def load(self, raw: Any) -> bool:
        """Take a stored value; False (nothing taken) when it is not a valid entry."""
        if not isinstance(raw, dict) or raw.get("version") != FORMAT_VERSION:
            return False
        if raw.get("build_id") != self.build_id or raw.get("file_size") != self.size:
            return False
        cu, units = raw.get("cu"), raw.get("units")
        if not isinstance(cu, tuple) or len(cu) != 3 or not all(_ints(c) for c in cu):
            return False
        starts, ends, offsets = cu
        if not len(starts) == len(ends) == len(offsets) or starts != sorted(starts):
            return False
        if not isinstance(units, dict) or not all(type(k) is int for k in units):
            return False
        self.cu, self._units = (starts, ends, offsets), units
        return True

    def unit(self, offset: int) -> Unit | None:
        """The stored unit at ``offset``, or None (not stored; or broken: then
        the stored units are dropped and the file removed)."""
        raw = self._units.get(offset)
        if raw is None:
            return None
        unit = decode_unit(raw)
        if unit is None:
            self._units.clear()
            self._cache.remove(self)
        return unit

    def add(self, offset: int, unit: Unit) -> None:
        """Store a unit just built (saved at once while the entry is small)."""
        if self.cu is None or len(self._units) >= MAX_STORED_UNITS:
            return
        self._units[offset] = encode_unit(unit)
        self.dirty = True
        if len(self._units) <= EAGER_UNITS:
            self.flush()
        else:
            self.flush_if_due()

    def flush_if_due(self) -> None:
        """Write the entry if units were added and it was last written
        :data:`SAVE_INTERVAL_S` ago or more."""
        if self.dirty and self._cache.clock() >= self._saved_at + SAVE_INTERVAL_S:
            self.flush()

    def flush(self) -> None:
        """Write the entry if units were added since it was last written."""
        if not self.dirty or self.cu is None:
            return
        self.dirty = False
        self._saved_at = self._cache.clock()
        value = {
            "version": FORMAT_VERSION,
            "build_id": self.build_id,
            "file_size": self.size,
            "cu": self.cu,
            "units": self._units,
        }
        self._cache.save(self, value)


def encode_unit(unit: Unit) -> RawUnit:
    """``unit``'s inline ranges as plain data: each subprogram's inline list
    once (a subprogram of several ranges shares one), each frame once."""
    frames: dict[InlineFrame, int] = {}
    groups: list[list[RawInline]] = []
    group_at: dict[int, int] = {}
    group_of: list[int] = []
    for inlines in unit.sub_inlines:
        at = group_at.get(id(inlines))
        if at is None:
            at = group_at[id(inlines)] = len(groups)
            groups.append(
                [(i.low, i.high, i.depth, frames.setdefault(i.frame, len(frames))) for i in inlines]
            )
        group_of.append(at)
    raw_frames = [(f.function, f.mangled, f.call_file, f.call_line) for f in frames]
    return list(unit.sub_lows), list(unit.sub_highs), group_of, groups, raw_frames


def decode_unit(raw: Any) -> Unit | None:
    """The unit stored as ``raw``, or None when any field is not what
    :func:`encode_unit` makes."""
    if not isinstance(raw, tuple) or len(raw) != 5:
        return None
    lows, highs, group_of, groups, raw_frames = raw
    if not (_ints(lows) and _ints(highs) and _ints(group_of)) or not isinstance(groups, list):
        return None
    if not len(lows) == len(highs) == len(group_of) or lows != sorted(lows):
        return None
    if not isinstance(raw_frames, list) or not all(_is_frame(f) for f in raw_frames):
        return None
    frames = [InlineFrame(*f) for f in raw_frames]
    decoded: list[list[Inline]] = []
    for group in groups:
        if not isinstance(group, list):
            return None
        inlines = []
        for item in group:
            if not (isinstance(item, tuple) and len(item) == 4 and _ints(list(item))):
                return None
            if not 0 <= item[3] < len(frames):
                return None
            inlines.append(Inline(item[0], item[1], item[2], frames[item[3]]))
        decoded.append(inlines)
    if not all(0 <= g < len(decoded) for g in group_of):
        return None
    return Unit(sub_lows=lows, sub_highs=highs, sub_inlines=[decoded[g] for g in group_of])


def _is_frame(value: object) -> TypeGuard[RawFrame]:
    if not isinstance(value, tuple) or len(value) != 4:
        return False
    function, mangled, call_file, call_line = value
    return (
        type(function) is str
        and (mangled is None or type(mangled) is str)
        and (call_file is None or type(call_file) is str)
        and (call_line is None or type(call_line) is int)
    )


def _ints(values: object) -> TypeGuard[list[int]]:
    return isinstance(values, list) and all(type(v) is int for v in values)
