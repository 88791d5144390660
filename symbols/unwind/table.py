"""Compact x86-64 unwind tables built from an ELF's ``.eh_frame`` / ``.debug_frame``.

Owns :class:`UnwindTable` (rows sorted by address, packed the way the BPF
walker reads them), :class:`UnwindRow` and :func:`build_unwind_table`. Each
row says, from its ``pc`` up to the next row's, how to find the canonical
frame address (CFA = rsp + off or rbp + off) and where the return address and
the caller's rbp are (CFA + offset, or rbp unchanged). Rows of any other form
are marked, so the walker stops cleanly there instead of guessing:

- ``GAP``: no FDE covers this code (the walker may use the frame pointer);
- ``STOP``: the return address is undefined (``_start``): the stack ends here;
- ``UNSUPPORTED``: a CFA or register rule outside the forms above;
- ``PLT``: the well-known ``.plt`` expression, CFA = rsp + off + 8 when
  ``(pc & 15) >= arg``;
- ``SIGNAL``: a signal trampoline (``__restore_rt``, CIE augmentation 'S'):
  the interrupted registers are in the ``ucontext`` at rsp.

Rows come from :mod:`bpftop.symbols.unwind.eh_frame` (FDE by FDE, surviving a
failing one: it gets one ``UNSUPPORTED`` row; rows clipped to the FDE's
range, each FDE closed with a ``GAP`` row); here they are sorted, compacted
and packed. The sections are read with ``struct``
(:mod:`bpftop.symbols.elf.sections`), not pyelftools. Pure Python; nothing
here imports ``bpftop.bpf``. A cold build takes ~0.06 CPU-s for libc and
~0.17 for python3.11 (``bench/unwind_bench.py``; pyelftools took 0.7-0.9 and
1.9-2.3): build tables off the tick path and keep them in
:class:`~bpftop.symbols.unwind.cache.UnwindCache`.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from bpftop.symbols.elf.sections import EM_X86_64, read_sections
from bpftop.symbols.unwind.cfa_program import Row
from bpftop.symbols.unwind.cfa_rules import RowKind
from bpftop.symbols.unwind.eh_frame import CfiError, frame_rows

__all__ = ["ROW_FORMAT", "ROW_SIZE", "RowKind", "UnwindRow", "UnwindTable", "build_unwind_table"]

# One row as the BPF walker reads it (bpf/unwind.bpf.c's struct unwind_row):
# u32 pc (ELF vaddr), s32 cfa_off, s16 rbp_off (0: unchanged), s16 ra_off,
# u8 kind, u8 arg, 2 bytes padding.
ROW_FORMAT = struct.Struct("<IihhBB2x")
ROW_SIZE = ROW_FORMAT.size
GAP = RowKind.GAP.value


@dataclass(frozen=True, slots=True)
class UnwindRow:
    """One decoded row (see the module docstring for the meaning of the fields)."""

    pc: int
    kind: RowKind
    cfa_offset: int = 0
    rbp_offset: int = 0
    ra_offset: int = 0
    arg: int = 0

    def rule(self) -> tuple[RowKind, int, int, int, int]:
        return (self.kind, self.cfa_offset, self.rbp_offset, self.ra_offset, self.arg)

    def packed(self) -> bytes:
        return ROW_FORMAT.pack(
            self.pc, self.cfa_offset, self.rbp_offset, self.ra_offset, self.kind, self.arg
        )


@dataclass(frozen=True, slots=True)
class UnwindTable:
    """The rows of one ELF file, sorted by pc and packed (``ROW_FORMAT`` each)."""

    packed: bytes
    source: str
    build_id: str | None = None
    fdes: int = 0
    failed_fdes: int = 0
    _pcs: list[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pcs = [fields[0] for fields in ROW_FORMAT.iter_unpack(self.packed)]
        object.__setattr__(self, "_pcs", pcs)

    def __len__(self) -> int:
        return len(self.packed) // ROW_SIZE

    def rows(self) -> Iterator[UnwindRow]:
        for pc, cfa, rbp, ra, kind, arg in ROW_FORMAT.iter_unpack(self.packed):
            yield UnwindRow(pc, RowKind(kind), cfa, rbp, ra, arg)

    def pcs(self) -> list[int]:
        return list(self._pcs)

    def lookup(self, vaddr: int) -> UnwindRow:
        """The row in force at ``vaddr`` (a GAP row before the first one)."""
        at = bisect.bisect_right(self._pcs, vaddr) - 1
        if at < 0:
            return UnwindRow(0, RowKind.GAP)
        pc, cfa, rbp, ra, kind, arg = ROW_FORMAT.unpack_from(self.packed, at * ROW_SIZE)
        return UnwindRow(pc, RowKind(kind), cfa, rbp, ra, arg)

    def raw_row(self, vaddr: int) -> tuple[int, int, int, int, int, int] | None:
        """The fields of the row in force at ``vaddr`` as plain ints (pc, cfa_offset,
        rbp_offset, ra_offset, kind, arg), or None before the first row: the
        allocation-light form of :meth:`lookup` for walkers on a hot path."""
        at = bisect.bisect_right(self._pcs, vaddr) - 1
        if at < 0:
            return None
        fields: tuple[int, int, int, int, int, int] = ROW_FORMAT.unpack_from(
            self.packed, at * ROW_SIZE
        )
        return fields

    def kinds(self) -> dict[RowKind, int]:
        """How many rows of each kind (for diagnostics and benchmarks)."""
        counts: dict[RowKind, int] = {}
        for row in self.rows():
            counts[row.kind] = counts.get(row.kind, 0) + 1
        return counts


def build_unwind_table(stream: IO[bytes], build_id: str | None = None) -> UnwindTable | None:
    """The unwind table of an open ELF file, or None if it has no usable CFI."""
    found = read_sections(stream, (".eh_frame", ".debug_frame"))
    if found is None or found[0] != EM_X86_64:
        return None
    sections = found[1]
    rows: list[Row] = []
    covered: set[int] = set()
    fdes = failed = 0
    sources = []
    try:
        for name, eh_frame in ((".eh_frame", True), (".debug_frame", False)):
            if name in sections:
                seen, broken = frame_rows(sections[name], eh_frame, covered, rows)
                fdes, failed = fdes + seen, failed + broken
                sources.append(name[1:])
    except CfiError:
        return None
    if not fdes:
        return None
    packed = b"".join([ROW_FORMAT.pack(pc, *rule) for pc, rule in _compact(rows)])
    return UnwindTable(packed, "+".join(sources), build_id, fdes, failed)


def _compact(rows: list[Row]) -> list[Row]:
    """Sorted by pc; at one pc a real row beats an FDE's end marker; a row
    with the same rule as the one before it is dropped."""
    rows.sort(key=_order)
    out: list[Row] = []
    for row in rows:
        if out and out[-1][0] == row[0]:
            out[-1] = row
        elif not out or out[-1][1] != row[1]:
            out.append(row)
    # Replacing a row may have made two neighbours equal; one more pass.
    final: list[Row] = []
    for row in out:
        if not final or final[-1][1] != row[1]:
            final.append(row)
    return final


def _order(row: Row) -> tuple[int, bool]:
    return row[0], row[1][3] != GAP
