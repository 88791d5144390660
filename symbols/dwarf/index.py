"""DWARF for the frames on screen: source lines and inlined functions, lazily.

Owns :class:`DwarfIndex` (one per file holding ``.debug_info``: the binary
itself or its separate debug file). Nothing is read until an address is asked
about; then, once per file, the compile-unit address ranges are indexed
(``.debug_aranges``, else each CU's top DIE), and once per compile unit that
is actually hit, its line table is decoded into sorted arrays and its
``DW_TAG_inlined_subroutine`` ranges are collected per enclosing subprogram.
A lookup is then two ``bisect`` calls and a scan of one subprogram's few
inline ranges: DWARF is never scanned per address. Nothing here raises: a
broken unit simply answers nothing.

With a :class:`~bpftop.symbols.dwarf.cache.DwarfCache`, the CU index and the
units' inline ranges are also kept on disk: a later run answers ``has_dwarf``
and the inline chains of units seen before without opening the file with
pyelftools (for libc's debug file, ``get_dwarf_info`` alone took 0.07 s of
GIL-held Python, the CU index 0.035 s). Source lines still open the file.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from elftools.dwarf.die import DIE
from elftools.elf.elffile import ELFFile

from bpftop.symbols.dwarf.dies import (
    attr_value,
    die_names,
    die_ranges,
    file_at,
    file_names,
    read_lines,
)
from bpftop.symbols.names.demangle import display_and_mangled

if TYPE_CHECKING:
    from bpftop.symbols.dwarf.cache import DwarfCache, DwarfEntry

MAX_DIE_DEPTH = 64
MAX_CACHED_UNITS = 4096


@dataclass(frozen=True, slots=True)
class InlineFrame:
    """One inlined call an address sits in: the inlined function and the
    place (in its caller) it was inlined at."""

    function: str
    mangled: str | None
    call_file: str | None
    call_line: int | None


@dataclass(frozen=True, slots=True)
class Inline:
    """One address range of an inlined call, ``depth`` calls deep in its subprogram."""

    low: int
    high: int
    depth: int
    frame: InlineFrame


@dataclass(slots=True)
class Unit:
    """What one compile unit answers: inline ranges, and line rows once asked.

    ``files`` (the line program's file table) is None for a unit read from
    the disk cache until its lines are read."""

    line_addrs: list[int] = field(default_factory=list)
    line_files: list[str | None] = field(default_factory=list)
    line_numbers: list[int] = field(default_factory=list)
    sub_lows: list[int] = field(default_factory=list)
    sub_highs: list[int] = field(default_factory=list)
    sub_inlines: list[list[Inline]] = field(default_factory=list)
    files: list[str | None] | None = None
    lines_read: bool = False

    def line(self, vaddr: int) -> tuple[str, int] | None:
        at = bisect.bisect_right(self.line_addrs, vaddr) - 1
        if at < 0 or self.line_numbers[at] <= 0:
            return None
        path = self.line_files[at]
        return None if path is None else (path, self.line_numbers[at])

    def inlines(self, vaddr: int) -> list[InlineFrame]:
        """The inline chain at ``vaddr``, innermost first."""
        at = bisect.bisect_right(self.sub_lows, vaddr) - 1
        for index in range(at, max(at - 4, -1), -1):
            if self.sub_lows[index] <= vaddr < self.sub_highs[index]:
                hits = [i for i in self.sub_inlines[index] if i.low <= vaddr < i.high]
                hits.sort(key=lambda i: -i.depth)
                return [i.frame for i in hits]
        return []


class DwarfIndex:
    """Lazy source lines and inline chains for one file's DWARF (``cache``:
    where what is learnt persists across runs; None: memory only)."""

    def __init__(self, path: str, cache: DwarfCache | None = None) -> None:
        self.path = path
        self._elf: Any = None
        self._dwarf: Any = None
        self._stream: Any = None
        self._cache = cache
        self._entry: DwarfEntry | None = None
        self._looked_up = cache is None  # the disk cache was asked (once)
        self._cu_starts: list[int] | None = None
        self._cu_ends: list[int] = []
        self._cu_offsets: list[int] = []
        self._units: dict[int, Unit] = {}
        self.error: str | None = None
        self.units_built = 0  # built from the file with pyelftools
        self.units_loaded = 0  # read from the disk cache

    def close(self) -> None:
        """Close the file (kept open for lazy reads) and save unsaved cache units."""
        if self._entry is not None:
            self._entry.flush()
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _open(self) -> bool:
        if self._dwarf is not None:
            return True
        if self.error is not None:
            return False
        try:
            self._stream = open(self.path, "rb")  # noqa: SIM115 - kept open for lazy reads
            if self._entry is not None and not self._entry.describes(self._stream):
                self.error = "changed on disk"  # its cached answers are another file's
                self.close()
                return False
            self._elf = ELFFile(self._stream)
            if not self._elf.has_dwarf_info():
                self.error = "no DWARF"
                self.close()
                return False
            self._dwarf = self._elf.get_dwarf_info()
            return True
        except Exception as exc:  # pyelftools raises many kinds on bad input
            self.error = f"{type(exc).__name__}: {exc}"
            self.close()
            return False

    @property
    def has_dwarf(self) -> bool:
        if not self._looked_up and self._cache is not None and self.error is None:
            self._looked_up = True
            self._entry = self._cache.entry(self.path)
            if self._entry is not None and self._entry.cu is not None:
                self._cu_starts, self._cu_ends, self._cu_offsets = self._entry.cu
        if self.error is None and self._cu_starts is not None:
            return True  # indexed: from the file, or from the disk cache without opening it
        return self._open()

    def line(self, vaddr: int) -> tuple[str, int] | None:
        """``(file, line)`` of an ELF virtual address, or None."""
        unit = self._unit_at(vaddr)
        if unit is None:
            return None
        if not unit.lines_read:  # the line table is decoded only when a line is asked for
            unit.lines_read = True
            if not self._open():
                return None
            try:
                cu = self._dwarf.get_CU_at(self._cu_offset_at(vaddr))
                if unit.files is None:  # a unit from the disk cache
                    unit.files = file_names(self._dwarf, cu)
                rows = read_lines(self._dwarf, cu, unit.files)
                unit.line_addrs, unit.line_files, unit.line_numbers = rows
            except Exception:
                return None
            finally:
                self._release()
        return unit.line(vaddr)

    def inlines(self, vaddr: int) -> list[InlineFrame]:
        """The inlined calls ``vaddr`` is inside, innermost first (maybe none)."""
        unit = self._unit_at(vaddr)
        return [] if unit is None else unit.inlines(vaddr)

    def _unit_at(self, vaddr: int) -> Unit | None:
        if not self.has_dwarf:
            return None
        try:
            offset = self._cu_offset_at(vaddr)
            if offset is None:
                return None
            if self._entry is not None and self._entry.dirty:
                self._entry.flush_if_due()  # units added in the last seconds
            unit = self._units.get(offset)
            if unit is not None:
                return unit
            if len(self._units) >= MAX_CACHED_UNITS:
                self._units.pop(next(iter(self._units)))
            unit = None if self._entry is None else self._entry.unit(offset)
            if unit is not None:
                self.units_loaded += 1
            elif self._open():
                try:
                    unit = self._build_unit(offset)
                finally:
                    self._release()
                self.units_built += 1
                if self._entry is not None:
                    self._entry.add(offset, unit)
            if unit is not None:
                self._units[offset] = unit
            return unit
        except Exception:  # a broken unit answers nothing
            return None

    def _release(self) -> None:
        """Drop pyelftools' own caches of parsed units, DIEs and line programs.

        What a unit answers is kept in :class:`Unit`; pyelftools would
        otherwise keep every DIE it ever parsed (about a gigabyte for libc and
        python3.11 with their debug files). These are private attributes of
        pyelftools 0.33, so each is cleared only when it has the expected type.
        """
        for name in ("_cu_cache", "_cu_offsets_map"):
            value = getattr(self._dwarf, name, None)
            if isinstance(value, list):
                value.clear()
        tables = getattr(self._dwarf, "_linetable_cache", None)
        if isinstance(tables, dict):
            tables.clear()

    def _cu_offset_at(self, vaddr: int) -> int | None:
        if self._cu_starts is None:
            self._index_units()
        assert self._cu_starts is not None
        at = bisect.bisect_right(self._cu_starts, vaddr) - 1
        for index in range(at, max(at - 8, -1), -1):
            if self._cu_starts[index] <= vaddr < self._cu_ends[index]:
                return self._cu_offsets[index]
        return None

    def _index_units(self) -> None:
        """CU ranges, once per file: from .debug_aranges, else each CU's top DIE."""
        rows: list[tuple[int, int, int]] = []
        try:
            aranges = self._dwarf.get_aranges()
        except Exception:
            aranges = None
        if aranges is not None:
            for entry in aranges.entries:
                start, length = entry.begin_addr, entry.length
                if length > 0:
                    rows.append((start, start + length, entry.info_offset))
        else:
            for cu in self._dwarf.iter_CUs():
                top = cu.get_top_DIE()
                for low, high in die_ranges(self._dwarf, cu, top):
                    rows.append((low, high, cu.cu_offset))
        rows.sort()
        self._cu_starts = [r[0] for r in rows]
        self._cu_ends = [r[1] for r in rows]
        self._cu_offsets = [r[2] for r in rows]
        if self._entry is not None:
            self._entry.cu = (self._cu_starts, self._cu_ends, self._cu_offsets)

    def _build_unit(self, offset: int) -> Unit:
        cu = self._dwarf.get_CU_at(offset)
        files = file_names(self._dwarf, cu)
        unit = Unit(files=files)
        for low, high, inlines in _subprograms(self._dwarf, cu, files):
            unit.sub_lows.append(low)
            unit.sub_highs.append(high)
            unit.sub_inlines.append(inlines)
        order = sorted(range(len(unit.sub_lows)), key=unit.sub_lows.__getitem__)
        unit.sub_lows = [unit.sub_lows[i] for i in order]
        unit.sub_highs = [unit.sub_highs[i] for i in order]
        unit.sub_inlines = [unit.sub_inlines[i] for i in order]
        return unit


# What a DIE's children are to _subprograms: where subprograms are found (the
# unit, namespaces, classes), inside a subprogram (inline calls are collected),
# or neither.
_SCOPE, _BODY, _SKIP = 0, 1, 2
_SCOPES = ("DW_TAG_namespace", "DW_TAG_class_type", "DW_TAG_structure_type")


def _subprograms(
    dwarf: Any, cu: Any, files: list[str | None]
) -> Iterator[tuple[int, int, list[Inline]]]:
    """Each range of each subprogram with code (under the unit, namespaces and
    classes), with the inlined calls in it (through lexical blocks), in one
    pass over the unit's DIEs. pyelftools' own walk (``iter_children``)
    keeps every DIE of the unit and inserts each into a sorted list: the unit
    of a 4,096-function program took 37 MB that way, and the insertions make
    it quadratic. Here each DIE is parsed, used and dropped."""
    stream = dwarf.debug_info_sec.stream
    top = cu.get_top_DIE()
    end = cu.cu_offset + cu.size
    # Per open DIE with children: what its children are, the inline depth they
    # get and the list they go to.
    open_dies: list[tuple[int, int, list[Inline]]] = [(_SCOPE, 0, [])]
    pos = top.offset + top.size
    while pos < end and open_dies:
        die = DIE(cu, stream, pos)
        pos += die.size
        if die.is_null():
            open_dies.pop()
            continue
        kind, depth, out = open_dies[-1]
        child = (_SKIP, 0, out)
        if kind == _SCOPE and die.tag == "DW_TAG_subprogram":
            ranges = die_ranges(dwarf, cu, die)
            if ranges:
                child = (_BODY, 1, [])
                for low, high in ranges:
                    yield low, high, child[2]
        elif kind == _SCOPE and die.tag in _SCOPES and len(open_dies) <= MAX_DIE_DEPTH:
            child = (_SCOPE, 0, out)
        elif kind == _BODY and die.tag == "DW_TAG_inlined_subroutine":
            frame = _inline_frame(die, files)
            out.extend(Inline(low, high, depth, frame) for low, high in die_ranges(dwarf, cu, die))
            child = (_BODY, depth + 1, out) if depth < MAX_DIE_DEPTH else child
        elif kind == _BODY and die.tag == "DW_TAG_lexical_block":
            child = (_BODY, depth, out)
        if die.has_children:
            open_dies.append(child)


def _inline_frame(die: Any, files: list[str | None]) -> InlineFrame:
    name, linkage = die_names(die)
    shown, mangled = display_and_mangled(linkage) if linkage else (name or "[inlined]", None)
    call_file = file_at(files, attr_value(die, "DW_AT_call_file"))
    line = attr_value(die, "DW_AT_call_line")
    call_line = line if isinstance(line, int) and line > 0 else None
    return InlineFrame(shown, mangled, call_file, call_line)
