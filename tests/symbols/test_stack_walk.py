"""walk_copied_stack on synthetic tables and stack bytes: each row kind, each
way a walk ends, and the pc / pc - 1 rule of bpf/unwind.bpf.c."""

from __future__ import annotations

import struct

from bpftop.symbols.unwind.stack_walk import (
    SIGFRAME_RBP,
    SIGFRAME_RIP,
    SIGFRAME_RSP,
    StopReason,
    UserRegs,
    WalkResult,
    walk_copied_stack,
)
from bpftop.symbols.unwind.table import RowKind, UnwindRow, UnwindTable

BIAS = 0x7F00_0000_0000
SP = 0x7FFF_0000_1000
# A synthetic file: functions at these ELF vaddrs.
LEAF = 0x1000  # CFA = rsp + 16 (one push), ra at CFA - 8
MID = 0x2000  # CFA = rsp + 8 (frameless), ra at CFA - 8
FP_FUNC = 0x3000  # CFA = rbp + 16, rbp saved at CFA - 16
PLT = 0x4000  # the .plt rule, threshold 11
SIGNAL = 0x5000  # __restore_rt
START = 0x6000  # _start: STOP
GAP_CODE = 0x7000  # no FDE
BAD = 0x8000  # an unsupported rule
END = 0x9000


def _table() -> UnwindTable:
    rows = [
        UnwindRow(LEAF, RowKind.RSP, 16, 0, -8),
        UnwindRow(MID, RowKind.RSP, 8, 0, -8),
        UnwindRow(FP_FUNC, RowKind.RBP, 16, -16, -8),
        UnwindRow(PLT, RowKind.PLT, 8, 0, -8, 11),
        UnwindRow(SIGNAL, RowKind.SIGNAL),
        UnwindRow(START, RowKind.STOP),
        UnwindRow(GAP_CODE, RowKind.GAP),
        UnwindRow(BAD, RowKind.UNSUPPORTED),
        UnwindRow(END, RowKind.GAP),
    ]
    return UnwindTable(b"".join(r.packed() for r in rows), "test")


TABLE = _table()


def _lookup(pc: int) -> tuple[UnwindTable, int] | None:
    return (TABLE, BIAS) if BIAS <= pc < BIAS + END else None


def _at(vaddr: int) -> int:
    return BIAS + vaddr


def _stack(words: dict[int, int], size: int) -> bytes:
    """``size`` bytes from SP with ``words`` (offset from SP -> u64) set."""
    data = bytearray(size)
    for offset, value in words.items():
        struct.pack_into("<Q", data, offset, value)
    return bytes(data)


def _walk(ip: int, words: dict[int, int], size: int = 256, bp: int = 0, **kw: object) -> WalkResult:
    return walk_copied_stack(UserRegs(ip, SP, bp), _stack(words, size), _lookup, **kw)  # type: ignore[arg-type]


def test_rsp_rows_walk_to_a_stop_row() -> None:
    # leaf (CFA = SP+16, ra at SP+8) -> mid (frameless: CFA = SP+24, ra at SP+16) -> _start
    result = _walk(_at(LEAF + 4), {8: _at(MID + 5), 16: _at(START + 9)})
    assert result == WalkResult((_at(LEAF + 4), _at(MID + 5), _at(START + 9)), True, "")


def test_callers_are_looked_up_at_pc_minus_one() -> None:
    # A return address right at the end of mid's rows (noreturn call) belongs to mid:
    # at pc it would read FP_FUNC's rbp rule; at pc - 1 it is mid's frameless rule.
    result = _walk(_at(LEAF), {8: _at(FP_FUNC), 16: _at(START + 1)})
    assert result.addresses == (_at(LEAF), _at(FP_FUNC), _at(START + 1))
    assert result.complete


def test_the_first_frame_is_looked_up_at_pc() -> None:
    # ip exactly at START is _start itself (STOP), not the row before it.
    result = _walk(_at(START), {})
    assert result == WalkResult((_at(START),), True, "")


def test_rbp_rows_restore_the_caller_rbp() -> None:
    # FP_FUNC twice: CFA = rbp + 16; the saved rbp at CFA - 16 is the next frame's rbp.
    words = {32: SP + 64, 40: _at(FP_FUNC + 5), 64: SP + 128, 72: _at(START + 1)}
    result = _walk(_at(FP_FUNC + 8), words, bp=SP + 32)
    assert result == WalkResult((_at(FP_FUNC + 8), _at(FP_FUNC + 5), _at(START + 1)), True, "")


def test_zero_return_address_read_by_a_row_ends_the_stack() -> None:
    """Go's outermost frames (runtime.goexit, runtime.mstart) have plain rows;
    the word where their return address would be is 0: the stack is whole."""
    result = _walk(_at(LEAF + 4), {8: _at(MID + 1), 16: 0})
    assert result == WalkResult((_at(LEAF + 4), _at(MID + 1)), True, StopReason.END_MARK)


def test_zero_return_address_from_the_frame_pointer_is_no_end_mark() -> None:
    """A frame-pointer step that reads 0 proves nothing: the walk is cut."""
    result = _walk(_at(GAP_CODE + 4), {0: 0, 8: 0}, bp=SP)
    assert result == WalkResult((_at(GAP_CODE + 4),), False, StopReason.ZERO_PC)


def test_copy_too_short_says_so() -> None:
    result = _walk(_at(LEAF + 4), {8: _at(MID + 5)}, size=16)
    assert result.addresses == (_at(LEAF + 4), _at(MID + 5))
    assert result.reason == "stack copy too short"
    assert not result.complete


def test_gap_uses_the_frame_pointer_when_allowed() -> None:
    bp = SP + 48
    words = {48: SP + 96, 56: _at(START + 2)}
    result = _walk(_at(GAP_CODE + 3), words, bp=bp)
    assert result == WalkResult((_at(GAP_CODE + 3), _at(START + 2)), True, "")


def test_gap_ends_the_walk_without_fp_fallback() -> None:
    words = {48: SP + 96, 56: _at(START + 2)}
    result = _walk(_at(GAP_CODE + 3), words, bp=SP + 48, fp_fallback=False)
    assert result == WalkResult((_at(GAP_CODE + 3),), False, StopReason.GAP)


def test_no_table_ends_or_falls_back_to_the_frame_pointer() -> None:
    unmapped = 0x1234_5678
    words = {0: SP + 64, 8: _at(START + 2)}
    assert _walk(unmapped, words, bp=SP, fp_fallback=False).reason == "no table"
    result = _walk(unmapped, words, bp=SP)
    assert result.addresses == (unmapped, _at(START + 2)) and result.complete


def test_fp_chain_that_goes_down_the_stack_is_cut() -> None:
    # rbp -> a lower rbp: the kernel walker treats it as 0, so the next fp step ends.
    words = {16: SP, 24: _at(GAP_CODE + 9)}
    result = _walk(_at(GAP_CODE + 1), words, bp=SP + 16)
    assert result.addresses == (_at(GAP_CODE + 1), _at(GAP_CODE + 9))
    assert result.reason == StopReason.FP_END


def test_plt_rule_adds_eight_past_the_threshold() -> None:
    # pc & 15 = 10 < 11: CFA = rsp + 8; pc & 15 = 11 >= 11: CFA = rsp + 16.
    words = {0: _at(START + 1), 8: _at(START + 2)}
    assert _walk(_at(PLT + 0x20 + 10), words).addresses == (_at(PLT + 0x2A), _at(START + 1))
    assert _walk(_at(PLT + 0x20 + 11), words).addresses == (_at(PLT + 0x2B), _at(START + 2))


def test_signal_frame_reads_the_ucontext_and_uses_the_exact_pc() -> None:
    # The interrupted pc is exactly START: looked up at pc (STOP); at pc - 1 it would
    # be the signal row again.
    words = {SIGFRAME_RIP: _at(START), SIGFRAME_RSP: SP + 200, SIGFRAME_RBP: 0}
    result = _walk(_at(SIGNAL + 4), words)
    assert result == WalkResult((_at(SIGNAL + 4), _at(START)), True, "")


def test_unsupported_rule_and_bad_cfa() -> None:
    assert _walk(_at(BAD + 1), {}).reason == StopReason.UNSUPPORTED
    # rbp rule with rbp = 0: the CFA is not above rsp.
    assert _walk(_at(FP_FUNC + 1), {}, bp=0).reason == StopReason.BAD_CFA


def test_max_frames() -> None:
    # A frameless function returning into itself: an endless chain of MID frames.
    words = {8 * i: _at(MID + 1) for i in range(32)}
    result = _walk(_at(MID + 1), words, max_frames=5)
    assert result.addresses == (_at(MID + 1),) * 5
    assert result == WalkResult(result.addresses, False, "max frames")
    # The walk takes exactly max_frames frames when the stack ends there.
    words[8 * 4] = _at(START + 1)
    assert _walk(_at(MID + 1), words, max_frames=6).complete
    assert not _walk(_at(MID + 1), words, max_frames=5).complete


def test_zero_ip_gives_an_empty_stack() -> None:
    assert _walk(0, {}) == WalkResult((), False, StopReason.ZERO_PC)


def test_the_copy_may_be_a_memoryview() -> None:
    data = memoryview(_stack({8: _at(MID + 5), 16: _at(START + 9)}, 64))
    result = walk_copied_stack(UserRegs(_at(LEAF + 4), SP, 0), data, _lookup)
    assert result.complete and len(result.addresses) == 3
