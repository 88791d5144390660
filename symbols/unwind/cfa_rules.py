"""The rule forms the BPF walker follows, and how a decoded CFI row maps to one.

Owns :class:`RowKind` and :func:`row_rule`: given the CFA rule and the
register rules in force at one address (as :mod:`bpftop.symbols.unwind.eh_frame`
decodes them), the walker's rule ``(cfa_offset, rbp_offset, ra_offset, kind,
arg)`` -- the order of ``unwind_table.ROW_FORMAT`` after the pc. Only CFA =
rsp + off or rbp + off, the return address at CFA + off and rbp at CFA + off
(or unchanged) are followed; the ``.plt`` CFA expression is recognized as
``PLT``; anything else is ``UNSUPPORTED`` and an undefined return address
``STOP``. Also the format's LEB128 readers. Pure functions on plain tuples; no I/O.
"""

from __future__ import annotations

from enum import IntEnum

# DWARF register numbers on x86-64.
REG_RBP = 6
REG_RSP = 7
REG_RA = 16

# Register rule forms (DWARF 5, 6.4.1), the first item of a rule tuple.
UNDEFINED = 0
SAME_VALUE = 1
OFFSET = 2
VAL_OFFSET = 3
REGISTER = 4
EXPRESSION = 5
VAL_EXPRESSION = 6

# The CFA expression of .plt entries: rsp + N + ((rip & 15) >= K) << 3.
_DW_OP_BREG7 = 0x77
_PLT_TAIL = bytes([0x80, 0x00, 0x3F, 0x1A])  # breg16 0; lit15; and
_PLT_END = bytes([0x2A, 0x33, 0x24, 0x22])  # ge; lit3; shl; plus
_DW_OP_LIT0 = 0x30
_SHORT = range(-(1 << 15), 1 << 15)
_WORD = range(-(1 << 31), 1 << 31)

# A CFA rule: (register or None, offset or None, expression bytes or None).
Cfa = tuple[int | None, int | None, bytes | None]
# A register rule: (form, argument).
RegRule = tuple[int, int | bytes | None]
# A walker rule: (cfa_offset, rbp_offset, ra_offset, kind, arg).
Rule = tuple[int, int, int, int, int]


class RowKind(IntEnum):
    """How one row finds the caller; the numbers are shared with the BPF walker."""

    GAP = 0
    RSP = 1
    RBP = 2
    STOP = 3
    UNSUPPORTED = 4
    PLT = 5
    SIGNAL = 6


GAP_RULE: Rule = (0, 0, 0, RowKind.GAP.value, 0)
STOP_RULE: Rule = (0, 0, 0, RowKind.STOP.value, 0)
UNSUPPORTED_RULE: Rule = (0, 0, 0, RowKind.UNSUPPORTED.value, 0)
SIGNAL_RULE: Rule = (0, 0, 0, RowKind.SIGNAL.value, 0)
_RSP = RowKind.RSP.value
_RBP = RowKind.RBP.value
_PLT = RowKind.PLT.value


def row_rule(cfa: Cfa, regs: dict[int, RegRule]) -> Rule:
    """The walker's rule for one decoded row (CFA rule and register rules)."""
    ra = regs.get(REG_RA)
    if ra is None or ra[0] == UNDEFINED:
        return STOP_RULE
    ra_offset = ra[1]
    if ra[0] != OFFSET or type(ra_offset) is not int:
        return UNSUPPORTED_RULE
    rbp = regs.get(REG_RBP)
    rbp_offset = 0
    if rbp is not None:
        if rbp[0] == OFFSET and type(rbp[1]) is int:
            rbp_offset = rbp[1]
        elif rbp[0] != SAME_VALUE and rbp[0] != UNDEFINED:
            return UNSUPPORTED_RULE
    reg, offset, expr = cfa
    if expr is not None:
        plt = plt_rule(expr)
        if plt is None or not _fits(plt[0], ra_offset, rbp_offset):
            return UNSUPPORTED_RULE
        return (plt[0], rbp_offset, ra_offset, _PLT, plt[1])
    if reg == REG_RSP:
        kind = _RSP
    elif reg == REG_RBP:
        kind = _RBP
    else:
        return UNSUPPORTED_RULE
    if offset is None or not _fits(offset, ra_offset, rbp_offset):
        return UNSUPPORTED_RULE
    return (offset, rbp_offset, ra_offset, kind, 0)


def _fits(cfa_offset: int, ra_offset: int, rbp_offset: int) -> bool:
    return cfa_offset in _WORD and ra_offset in _SHORT and rbp_offset in _SHORT


def plt_rule(expr: bytes) -> tuple[int, int] | None:
    """(offset N, threshold K) of the .plt CFA expression, or None if it is another one."""
    if len(expr) < 2 or expr[0] != _DW_OP_BREG7:
        return None
    try:
        offset, at = sleb(expr, 1)
    except IndexError:  # cut short
        return None
    rest = expr[at:]
    if len(rest) != 9 or rest[:4] != _PLT_TAIL or rest[5:] != _PLT_END:
        return None
    threshold = rest[4] - _DW_OP_LIT0
    return (offset, threshold) if 0 <= threshold < 16 else None


def uleb(data: bytes, at: int) -> tuple[int, int]:
    """An unsigned LEB128 number at ``at`` and the offset past it."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def sleb(data: bytes, at: int) -> tuple[int, int]:
    """A signed LEB128 number at ``at`` and the offset past it."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (value - (1 << shift) if byte & 0x40 else value), at
