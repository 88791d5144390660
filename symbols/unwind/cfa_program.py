"""Running one CIE's or FDE's call frame instructions (DWARF 5, 6.4.2).

Owns :func:`run_program` and :func:`skip_program`: the DW_CFA_* opcodes of
one entry read and carried out on a row state (CFA rule, register rules),
a row handed out at each advance of the location, as pyelftools 0.33's
decoded table has them (so tables built by either are equal; see
:mod:`bpftop.symbols.unwind.eh_frame` for the quirks kept). An opcode pyelftools does
not know, or an operand running past the section's end, raises (IndexError,
ValueError, struct.error: the caller makes the section unreadable); an
instruction that cannot be carried out ends the run as failed, the rest is
still read.
"""

from __future__ import annotations

import struct

from bpftop.symbols.unwind import cfa_rules as cr
from bpftop.symbols.unwind.cfa_rules import Cfa, RegRule, Rule, sleb, uleb

_ARGS_SIZE = 0x2E  # DW_CFA_GNU_args_size
# Operands of each extended opcode pyelftools knows: "L" a LEB128 number,
# "B" a LEB128-sized block, a digit that many bytes.
_OPERANDS = {
    0x00: "", 0x01: "8", 0x02: "1", 0x03: "2", 0x04: "4", 0x05: "LL", 0x06: "L",
    0x07: "L", 0x08: "L", 0x09: "LL", 0x0A: "", 0x0B: "", 0x0C: "LL", 0x0D: "L",
    0x0E: "L", 0x0F: "B", 0x10: "LB", 0x11: "LL", 0x12: "LL", 0x13: "L", 0x14: "LL",
    0x15: "LL", 0x16: "LB", 0x2D: "", _ARGS_SIZE: "L",
}  # fmt: skip
_ADVANCE = {0x02: struct.Struct("<B"), 0x03: struct.Struct("<H"), 0x04: struct.Struct("<I")}
_U64 = struct.Struct("<Q")

Row = tuple[int, Rule]
State = tuple[Cfa, dict[int, RegRule]]


def run_program(
    data: bytes, at: int, end: int, aligns: tuple[int, int], state: State,
    cie_regs: dict[int, RegRule] | None, span: tuple[int, int], rows: list[Row] | None,
) -> tuple[int, bool, State | None]:  # fmt: skip
    """Run the instructions in ``data[at:end]`` from ``state`` at location ``span[0]``.

    ``aligns``: the CIE's (code, data) alignment factors. ``cie_regs``: the
    register rules ``DW_CFA_restore`` goes back to (None in a CIE, or after a
    CIE with an empty table: restoring fails there). ``rows`` (None for a CIE)
    gets ``(pc, rule)`` of each row before ``span[1]``, pcs raised to
    ``span[0]``. Returns (offset after the last instruction, failed, the last
    row's state or None if there was no row).
    """
    code_align, data_align = aligns
    start, fde_end = span
    in_cie = rows is None
    cfa, regs = state[0], dict(state[1])
    pc = start
    stack: list[State] = []
    last: State | None = None
    clipped = False
    row_rule = cr.row_rule
    while at < end:
        op = data[at]
        at += 1
        high = op & 0xC0
        if high == 0x40:  # advance_loc
            next_pc = pc + (op & 0x3F) * code_align
        elif op in _ADVANCE:  # advance_loc1/2/4
            advance = _ADVANCE[op]
            (delta,) = advance.unpack_from(data, at)
            at += advance.size
            next_pc = pc + delta * code_align
        elif op == 0x01:  # set_loc: a plain 8-byte address (as pyelftools reads it)
            (next_pc,) = _U64.unpack_from(data, at)
            at += 8
        else:  # a rule changes: no new row
            if high == 0x80:  # offset
                value, at = uleb(data, at)
                regs[op & 0x3F] = (cr.OFFSET, value * data_align)
            elif high:  # restore
                if cie_regs is None:
                    return skip_program(data, at, end), True, None
                _restore(regs, cie_regs, op & 0x3F)
            elif op == 0x0E:  # def_cfa_offset
                value, at = uleb(data, at)
                cfa = (cfa[0], value, None)
            elif op == 0x0A:  # remember_state
                stack.append((cfa, dict(regs)))
            elif op == 0x0B:  # restore_state
                if not stack:
                    return skip_program(data, at, end), True, None
                cfa, regs = stack.pop()
            elif op == 0x0C:  # def_cfa
                reg, at = uleb(data, at)
                value, at = uleb(data, at)
                cfa = (reg, value, None)
            elif op == 0x0D:  # def_cfa_register
                reg, at = uleb(data, at)
                cfa = (reg, cfa[1], None)
            elif op == 0 or op == 0x2D:  # nop, GNU_window_save / AARCH64_negate_ra_state
                pass
            elif op == _ARGS_SIZE:
                _, at = uleb(data, at)
                if in_cie:
                    return skip_program(data, at, end), True, None
            elif op == 0x06:  # restore_extended
                reg, at = uleb(data, at)
                if cie_regs is None:
                    return skip_program(data, at, end), True, None
                _restore(regs, cie_regs, reg)
            else:
                at, cfa = _other(data, at, op, aligns, cfa, regs)
            continue
        # The location advanced: the row so far ends at next_pc.
        if rows is not None and not clipped:
            if pc >= fde_end:
                clipped = True
            else:
                rows.append((pc if pc > start else start, row_rule(cfa, regs)))
        if in_cie:
            last = (cfa, dict(regs))
        pc = next_pc
    if cfa[0] is not None or regs:
        last = (cfa, regs)
        if rows is not None and not clipped and pc < fde_end:
            rows.append((pc if pc > start else start, row_rule(cfa, regs)))
    return at, False, last


def _other(
    data: bytes, at: int, op: int, aligns: tuple[int, int], cfa: Cfa, regs: dict[int, RegRule]
) -> tuple[int, Cfa]:
    """The less common opcodes (a register rule or a CFA rule set)."""
    code_align, data_align = aligns
    if op == 0x05 or op == 0x14:  # offset_extended, val_offset
        reg, at = uleb(data, at)
        value, at = uleb(data, at)
        regs[reg] = (cr.OFFSET if op == 0x05 else cr.VAL_OFFSET, value * data_align)
    elif op == 0x11 or op == 0x15:  # offset_extended_sf, val_offset_sf
        reg, at = uleb(data, at)
        value, at = sleb(data, at)
        regs[reg] = (cr.OFFSET if op == 0x11 else cr.VAL_OFFSET, value * data_align)
    elif op == 0x07 or op == 0x08:  # undefined, same_value
        reg, at = uleb(data, at)
        regs[reg] = (cr.UNDEFINED if op == 0x07 else cr.SAME_VALUE, None)
    elif op == 0x09:  # register
        reg, at = uleb(data, at)
        other, at = uleb(data, at)
        regs[reg] = (cr.REGISTER, other)
    elif op == 0x10 or op == 0x16:  # expression, val_expression
        reg, at = uleb(data, at)
        expr, at = _block(data, at)
        regs[reg] = (cr.EXPRESSION if op == 0x10 else cr.VAL_EXPRESSION, expr)
    elif op == 0x12:  # def_cfa_sf: pyelftools scales by the code alignment
        reg, at = uleb(data, at)
        value, at = sleb(data, at)
        cfa = (reg, value * code_align, None)
    elif op == 0x13:  # def_cfa_offset_sf
        value, at = sleb(data, at)
        cfa = (cfa[0], value * data_align, None)
    elif op == 0x0F:  # def_cfa_expression
        expr, at = _block(data, at)
        cfa = (None, None, expr)
    else:
        raise ValueError(f"unknown CFA opcode {op:#04x}")
    return at, cfa


def _restore(regs: dict[int, RegRule], cie_regs: dict[int, RegRule], reg: int) -> None:
    if reg in cie_regs:
        regs[reg] = cie_regs[reg]
    else:
        regs.pop(reg, None)


def skip_program(data: bytes, at: int, end: int) -> int:
    """Read the instructions in ``data[at:end]`` without running them; the
    offset after the last one (raises as :func:`run_program` does)."""
    while at < end:
        op = data[at]
        at += 1
        if op & 0xC0:
            if op & 0xC0 == 0x80:
                _, at = uleb(data, at)
            continue
        operands = _OPERANDS.get(op)
        if operands is None:
            raise ValueError(f"unknown CFA opcode {op:#04x}")
        for kind in operands:
            if kind == "L":
                _, at = uleb(data, at)
            elif kind == "B":
                _, at = _block(data, at)
            else:
                at = need(data, at, int(kind))
    return at


def need(data: bytes, at: int, size: int) -> int:
    """The offset past ``size`` bytes at ``at``; IndexError if they are not all there."""
    if at + size > len(data):
        raise IndexError("past the section's end")
    return at + size


def _block(data: bytes, at: int) -> tuple[bytes, int]:
    length, at = uleb(data, at)
    if at + length > len(data):
        raise IndexError("block past the section's end")
    return data[at : at + length], at + length
