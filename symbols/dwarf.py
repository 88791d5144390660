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
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from elftools.dwarf.die import DIE
from elftools.elf.elffile import ELFFile

from bpftop.symbols.demangle import display_and_mangled

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
class _Inline:
    low: int
    high: int
    depth: int
    frame: InlineFrame


@dataclass(slots=True)
class _Unit:
    """What one compile unit answers: inline ranges, and line rows once asked."""

    line_addrs: list[int] = field(default_factory=list)
    line_files: list[str | None] = field(default_factory=list)
    line_numbers: list[int] = field(default_factory=list)
    sub_lows: list[int] = field(default_factory=list)
    sub_highs: list[int] = field(default_factory=list)
    sub_inlines: list[list[_Inline]] = field(default_factory=list)
    files: list[str | None] = field(default_factory=list)
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
    """Lazy source lines and inline chains for one file's DWARF."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._elf: Any = None
        self._dwarf: Any = None
        self._stream: Any = None
        self._cu_starts: list[int] | None = None
        self._cu_ends: list[int] = []
        self._cu_offsets: list[int] = []
        self._units: dict[int, _Unit] = {}
        self.error: str | None = None
        self.units_built = 0

    def close(self) -> None:
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
        return self._open()

    def line(self, vaddr: int) -> tuple[str, int] | None:
        """``(file, line)`` of an ELF virtual address, or None."""
        unit = self._unit_at(vaddr)
        if unit is None:
            return None
        if not unit.lines_read:  # the line table is decoded only when a line is asked for
            unit.lines_read = True
            try:
                offset = self._cu_offset_at(vaddr)
                _read_lines(self._dwarf, self._dwarf.get_CU_at(offset), unit.files, unit)
            except Exception:
                return None
            finally:
                self._release()
        return unit.line(vaddr)

    def inlines(self, vaddr: int) -> list[InlineFrame]:
        """The inlined calls ``vaddr`` is inside, innermost first (maybe none)."""
        unit = self._unit_at(vaddr)
        return [] if unit is None else unit.inlines(vaddr)

    def _unit_at(self, vaddr: int) -> _Unit | None:
        if not self._open():
            return None
        try:
            offset = self._cu_offset_at(vaddr)
            if offset is None:
                return None
            unit = self._units.get(offset)
            if unit is None:
                if len(self._units) >= MAX_CACHED_UNITS:
                    self._units.pop(next(iter(self._units)))
                try:
                    unit = self._units[offset] = self._build_unit(offset)
                finally:
                    self._release()
                self.units_built += 1
            return unit
        except Exception:  # a broken unit answers nothing, and not again
            return None

    def _release(self) -> None:
        """Drop pyelftools' own caches of parsed units, DIEs and line programs.

        What a unit answers is kept in :class:`_Unit`; pyelftools would
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
                for low, high in _die_ranges(self._dwarf, cu, top):
                    rows.append((low, high, cu.cu_offset))
        rows.sort()
        self._cu_starts = [r[0] for r in rows]
        self._cu_ends = [r[1] for r in rows]
        self._cu_offsets = [r[2] for r in rows]

    def _build_unit(self, offset: int) -> _Unit:
        cu = self._dwarf.get_CU_at(offset)
        files = _file_names(self._dwarf, cu)
        unit = _Unit(files=files)
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
) -> Iterator[tuple[int, int, list[_Inline]]]:
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
    open_dies: list[tuple[int, int, list[_Inline]]] = [(_SCOPE, 0, [])]
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
            ranges = _die_ranges(dwarf, cu, die)
            if ranges:
                child = (_BODY, 1, [])
                for low, high in ranges:
                    yield low, high, child[2]
        elif kind == _SCOPE and die.tag in _SCOPES and len(open_dies) <= MAX_DIE_DEPTH:
            child = (_SCOPE, 0, out)
        elif kind == _BODY and die.tag == "DW_TAG_inlined_subroutine":
            frame = _inline_frame(die, files)
            out.extend(
                _Inline(low, high, depth, frame) for low, high in _die_ranges(dwarf, cu, die)
            )
            child = (_BODY, depth + 1, out) if depth < MAX_DIE_DEPTH else child
        elif kind == _BODY and die.tag == "DW_TAG_lexical_block":
            child = (_BODY, depth, out)
        if die.has_children:
            open_dies.append(child)


def _inline_frame(die: Any, files: list[str | None]) -> InlineFrame:
    name, linkage = _names(die)
    shown, mangled = display_and_mangled(linkage) if linkage else (name or "[inlined]", None)
    call_file = _file_at(files, _attr(die, "DW_AT_call_file"))
    line = _attr(die, "DW_AT_call_line")
    call_line = line if isinstance(line, int) and line > 0 else None
    return InlineFrame(shown, mangled, call_file, call_line)


def _names(die: Any) -> tuple[str | None, str | None]:
    """``(DW_AT_name, DW_AT_linkage_name)`` through abstract origins and specifications."""
    name = linkage = None
    for _ in range(8):
        attrs = die.attributes
        for key in ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name"):
            if linkage is None and key in attrs:
                linkage = _text(attrs[key].value)
        if name is None and "DW_AT_name" in attrs:
            name = _text(attrs["DW_AT_name"].value)
        if name is not None and linkage is not None:
            break
        links = ("DW_AT_abstract_origin", "DW_AT_specification")
        nxt = next((k for k in links if k in attrs), None)
        if nxt is None:
            break
        die = die.get_DIE_from_attribute(nxt)
    return name, linkage


def _attr(die: Any, name: str) -> Any:
    """An attribute's value, or None."""
    attr = die.attributes.get(name)
    return None if attr is None else attr.value


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _die_ranges(dwarf: Any, cu: Any, die: Any) -> list[tuple[int, int]]:
    attrs = die.attributes
    if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
        low = attrs["DW_AT_low_pc"].value
        high_attr = attrs["DW_AT_high_pc"]
        high = high_attr.value if high_attr.form == "DW_FORM_addr" else low + high_attr.value
        return [(low, high)] if high > low else []
    if "DW_AT_ranges" not in attrs:
        return []
    range_lists = dwarf.range_lists()
    if range_lists is None:
        return []
    base = 0
    top = cu.get_top_DIE()
    if "DW_AT_low_pc" in top.attributes:
        base = top.attributes["DW_AT_low_pc"].value
    result = []
    for entry in range_lists.get_range_list_at_offset(attrs["DW_AT_ranges"].value, cu=cu):
        if hasattr(entry, "base_address"):
            base = entry.base_address
        elif entry.end_offset > entry.begin_offset:
            shift = 0 if entry.is_absolute else base
            result.append((entry.begin_offset + shift, entry.end_offset + shift))
    return result


def _file_names(dwarf: Any, cu: Any) -> list[str | None]:
    """The CU line program's file table as paths, indexed as DWARF indexes them."""
    program = dwarf.line_program_for_CU(cu)
    if program is None:
        return []
    top = cu.get_top_DIE()
    comp_dir = _text(_attr(top, "DW_AT_comp_dir") or "")
    version = program["version"]
    dirs = [_text(d) for d in program["include_directory"]]
    if version < 5:
        dirs = [comp_dir, *dirs]  # DWARF 4: directory 0 is the CU's, files count from 1
    names: list[str | None] = [] if version >= 5 else [None]
    for entry in program["file_entry"]:
        name = _text(entry.name)
        index = entry.dir_index
        folder = dirs[index] if 0 <= index < len(dirs) else ""
        if folder and not folder.startswith("/") and comp_dir:
            folder = os.path.join(comp_dir, folder)
        names.append(name if name.startswith("/") else os.path.join(folder, name))
    return names


def _file_at(files: list[str | None], index: Any) -> str | None:
    return files[index] if isinstance(index, int) and 0 <= index < len(files) else None


def _read_lines(dwarf: Any, cu: Any, files: list[str | None], unit: _Unit) -> None:
    program = dwarf.line_program_for_CU(cu)
    if program is None:
        return
    rows: list[tuple[int, str | None, int]] = []
    for entry in program.get_entries():
        state = entry.state
        if state is None:
            continue
        if state.end_sequence:
            rows.append((state.address, None, 0))  # nothing past a sequence's end
        else:
            rows.append((state.address, _file_at(files, state.file), state.line))
    # Stable: for equal addresses the last row of the program wins after dedupe.
    rows.sort(key=lambda r: r[0])
    for addr, path, line in rows:
        if unit.line_addrs and unit.line_addrs[-1] == addr:
            if line > 0 or unit.line_numbers[-1] <= 0:
                unit.line_files[-1], unit.line_numbers[-1] = path, line
            continue
        unit.line_addrs.append(addr)
        unit.line_files.append(path)
        unit.line_numbers.append(line)
