"""The unwind-table build bpftop had before its own .eh_frame decoder: pyelftools
0.33's decoded CFI tables turned into rows (symbols/unwind/table.py up to
2c2f621, unchanged but for its name; the .plt expression and the register
numbers, which both builds share, come from symbols/unwind/cfa_rules.py). Kept for
tests only, as the reference the decoder's tables must equal
(tests/symbols/test_eh_frame.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

from elftools.elf.elffile import ELFFile

from bpftop.symbols.unwind.cfa_rules import REG_RA, REG_RBP, REG_RSP, plt_rule
from bpftop.symbols.unwind.table import RowKind, UnwindRow, UnwindTable

DW_CFA_GNU_ARGS_SIZE = 0x2E
MAX_PC = 0xFFFF_FFFF


def reference_table(stream: IO[bytes], build_id: str | None = None) -> UnwindTable | None:
    """The unwind table of an open ELF file, or None if it has no usable CFI."""
    try:
        elf = ELFFile(stream)
        if elf.get_machine_arch() != "x64":
            return None
        dwarf = elf.get_dwarf_info(relocate_dwarf_sections=False)
        fdes: list[Any] = []
        sources = []
        if dwarf.has_EH_CFI():
            fdes += _fdes(dwarf.EH_CFI_entries())
            sources.append("eh_frame")
        if dwarf.has_CFI():
            fdes += _fdes(dwarf.CFI_entries())
            sources.append("debug_frame")
    except Exception:  # pyelftools raises many kinds on damaged files
        return None
    if not fdes:
        return None
    rows, failed = _rows_of(fdes)
    packed = b"".join(row.packed() for row in _compact(rows))
    return UnwindTable(packed, "+".join(sources), build_id, len(fdes), failed)


def _fdes(entries: Iterable[Any]) -> list[Any]:
    return [e for e in entries if type(e).__name__ == "FDE"]


def _rows_of(fdes: list[Any]) -> tuple[list[UnwindRow], int]:
    """Rows of every FDE (the first FDE covering a start wins), and failures."""
    rows: list[UnwindRow] = []
    failed = 0
    covered: set[int] = set()
    for fde in fdes:
        start = int(fde["initial_location"])
        end = start + int(fde["address_range"])
        if start in covered or not 0 <= start < end <= MAX_PC:
            continue
        covered.add(start)
        fde_rows = _fde_rows(fde, start, end)
        if fde_rows is None:
            failed += 1
            fde_rows = [UnwindRow(start, RowKind.UNSUPPORTED)]
        rows.extend(fde_rows)
        rows.append(UnwindRow(end, RowKind.GAP))
    return rows, failed


def _fde_rows(fde: Any, start: int, end: int) -> list[UnwindRow] | None:
    table = _decoded(fde)
    if table is None:
        return None
    if b"S" in bytes(fde.cie.header.get("augmentation") or b""):
        return [UnwindRow(start, RowKind.SIGNAL)]
    rows = []
    for line in table:
        pc = int(line["pc"])
        if pc >= end:  # pyelftools may hold rows past the FDE's end
            break
        rows.append(_row(max(pc, start), line))
    return rows


def _decoded(fde: Any) -> list[Any] | None:
    try:
        return list(fde.get_decoded().table)
    except Exception:
        pass
    fde.instructions = [i for i in fde.instructions if int(i.opcode) != DW_CFA_GNU_ARGS_SIZE]
    try:
        return list(fde.get_decoded().table)
    except Exception:
        return None


def _row(pc: int, line: dict[Any, Any]) -> UnwindRow:
    ra = line.get(REG_RA)
    if ra is None or ra.type == "UNDEFINED":
        return UnwindRow(pc, RowKind.STOP)
    if ra.type != "OFFSET":
        return UnwindRow(pc, RowKind.UNSUPPORTED)
    rbp = line.get(REG_RBP)
    rbp_offset = 0
    if rbp is not None and rbp.type == "OFFSET":
        rbp_offset = int(rbp.arg)
    elif rbp is not None and rbp.type not in ("SAME_VALUE", "UNDEFINED"):
        return UnwindRow(pc, RowKind.UNSUPPORTED)
    cfa = line["cfa"]
    if cfa.expr is not None:
        plt = plt_rule(bytes(cfa.expr))
        if plt is None:
            return UnwindRow(pc, RowKind.UNSUPPORTED)
        return UnwindRow(pc, RowKind.PLT, plt[0], rbp_offset, int(ra.arg), plt[1])
    kind = {REG_RSP: RowKind.RSP, REG_RBP: RowKind.RBP}.get(cfa.reg, RowKind.UNSUPPORTED)
    if kind is RowKind.UNSUPPORTED or not _fits(int(cfa.offset), int(ra.arg), rbp_offset):
        return UnwindRow(pc, RowKind.UNSUPPORTED)
    return UnwindRow(pc, kind, int(cfa.offset), rbp_offset, int(ra.arg))


def _fits(cfa_offset: int, ra_offset: int, rbp_offset: int) -> bool:
    short = range(-(1 << 15), 1 << 15)
    return -(1 << 31) <= cfa_offset < 1 << 31 and ra_offset in short and rbp_offset in short


def _compact(rows: list[UnwindRow]) -> list[UnwindRow]:
    """Sorted by pc; at one pc a real row beats an FDE's end marker; a row
    with the same rule as the one before it is dropped."""
    rows.sort(key=lambda r: (r.pc, r.kind != RowKind.GAP))
    out: list[UnwindRow] = []
    for row in rows:
        if out and out[-1].pc == row.pc:
            out[-1] = row
        elif not out or out[-1].rule() != row.rule():
            out.append(row)
    # Replacing a row may have made two neighbours equal; one more pass.
    final: list[UnwindRow] = []
    for row in out:
        if not final or final[-1].rule() != row.rule():
            final.append(row)
    return final
