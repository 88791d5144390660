"""Walking a copied user stack with .eh_frame unwind tables, in user space.

Owns :func:`walk_copied_stack` and its values (:class:`UserRegs`,
:class:`WalkResult`, :class:`StopReason`, :data:`TableLookup`). It is the
in-kernel walker of ``bpf/unwind.bpf.c`` redone over the bytes a
perf_event_open sample copies (``PERF_SAMPLE_STACK_USER``: ``size`` bytes
from the user sp up, with ``PERF_SAMPLE_REGS_USER``), for the samples taken
before the BPF program is compiled. The semantics are the kernel walker's:

- every frame is recorded first, then the walk moves to its caller; the
  table is looked up at the pc for the first frame and after a signal frame,
  at pc - 1 for return addresses (a noreturn call can end its caller's FDE);
- RSP/RBP rows: CFA = rsp or rbp + off, which must lie above rsp; the return
  address is at CFA + ra_off, the caller's rbp at CFA + rbp_off (0: rbp
  unchanged); PLT rows add 8 to the CFA when ``(pc & 15) >= arg``;
- SIGNAL rows (``__restore_rt``): the interrupted rip, rbp and rsp are in the
  ucontext at rsp, and that rip is looked up as is;
- STOP rows (``_start``, ``clone3``): the stack is complete; so is a zero
  return address read by a table row: the runtime's end-of-stack mark where
  no row says "undefined" (Go 1.19's ``runtime.goexit`` and ``runtime.mstart``
  have plain rows, and the word above their return address is 0);
- GAP rows and code without a table use the frame pointer when
  ``fp_fallback`` (the kernel's "auto" mode), else end the walk;
- at most ``max_frames`` frames; a zero pc ends the walk.

Where the kernel would read any user memory, this can read only the copy:
a read outside it ends the walk with a reason. Expected ends are values
(``WalkResult.reason``), never exceptions. Pure Python, kept lean for a
per-sample path: a bisect per frame, no per-frame objects beyond small tuples
(about 25-45 µs per 21-frame walk here: ``pytest -s -k walk_cost
tests/symbols/test_stack_walk_live.py`` prints it).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeAlias

from bpftop.symbols.unwind.table import RowKind, UnwindTable

MAX_FRAMES = 128
# Where the interrupted registers are in the ucontext at rsp in __restore_rt
# (uc_mcontext's rbp, rsp, rip: the kernel walker's SIGFRAME_* offsets).
SIGFRAME_RBP = 120
SIGFRAME_RSP = 160
SIGFRAME_RIP = 168
_MASK64 = (1 << 64) - 1
_WORD = struct.Struct("<Q")
_GAP = int(RowKind.GAP)
_RSP = int(RowKind.RSP)
_RBP = int(RowKind.RBP)
_STOP = int(RowKind.STOP)
_PLT = int(RowKind.PLT)
_SIGNAL = int(RowKind.SIGNAL)

TableLookup: TypeAlias = Callable[[int], tuple[UnwindTable, int] | None]
"""An absolute pc -> (the unwind table of its file, the mapping's load bias), or
None (unmapped, or no table built yet). The row is ``table.raw_row(pc - bias)``."""


@dataclass(frozen=True, slots=True)
class UserRegs:
    """The user registers of a sample: absolute addresses."""

    ip: int
    sp: int
    bp: int


class StopReason(StrEnum):
    """Why a walk ended (a ``str``: ``WalkResult.reason`` compares equal to these)."""

    COMPLETE = ""  # a STOP row: the outermost frame
    END_MARK = "zero return address"  # a table row read 0: the outermost frame too
    NO_TABLE = "no table"  # pc unmapped or its file's table not built (no fp fallback)
    GAP = "no unwind info"  # a GAP row (code no FDE covers), no fp fallback
    UNSUPPORTED = "unsupported rule"
    SHORT_COPY = "stack copy too short"  # a read past the end of the copy
    BELOW_SP = "read below the stack pointer"  # a read below the copy's start
    BAD_CFA = "cfa not above sp"  # a corrupt frame: stacks grow down
    FP_END = "frame pointer chain ended"  # rbp was 0 when the fp had to be used
    ZERO_PC = "zero pc"
    MAX_FRAMES = "max frames"


@dataclass(frozen=True, slots=True)
class WalkResult:
    """The absolute pcs walked, leaf first (``regs.ip`` first, then return
    addresses); ``complete`` when a STOP row or a zero return address read by a
    table row ended it, else ``reason`` says why not."""

    addresses: tuple[int, ...]
    complete: bool
    reason: str


_COMPLETE = (StopReason.COMPLETE, StopReason.END_MARK)


# One step's outcome: the caller's (pc, sp, bp, pc is exact), or why the walk ends.
_Step: TypeAlias = tuple[int, int, int, bool] | StopReason
StackBytes: TypeAlias = bytes | bytearray | memoryview
"""The copy of the stack: a memoryview into a perf buffer does (no copy needed)."""


def walk_copied_stack(
    regs: UserRegs,
    stack: StackBytes,
    lookup: TableLookup,
    *,
    max_frames: int = MAX_FRAMES,
    fp_fallback: bool = True,
) -> WalkResult:
    """Walk the stack whose bytes from ``regs.sp`` up are ``stack``."""
    pc, sp, bp, exact = regs.ip, regs.sp, regs.bp, True
    base = regs.sp
    addresses: list[int] = []
    while True:
        if len(addresses) >= max_frames:
            reason = StopReason.MAX_FRAMES
            break
        if not pc:
            reason = StopReason.ZERO_PC
            break
        addresses.append(pc)
        at = pc if exact else pc - 1
        found = lookup(at)
        row = None if found is None else found[0].raw_row(at - found[1])
        step: _Step
        if row is not None and row[4] != _GAP:
            step = _row_step(row, pc, sp, bp, base, stack)
        elif fp_fallback:
            step = _fp_step(bp, base, stack)
        else:
            step = StopReason.NO_TABLE if found is None else StopReason.GAP
        if isinstance(step, StopReason):
            reason = step
            break
        pc, sp, bp, exact = step
        if not pc and row is not None and row[4] != _GAP:
            reason = StopReason.END_MARK
            break
    return WalkResult(tuple(addresses), reason in _COMPLETE, str(reason))


def _row_step(
    row: tuple[int, int, int, int, int, int],
    pc: int,
    sp: int,
    bp: int,
    base: int,
    stack: StackBytes,
) -> _Step:
    """The caller's registers by one table row (see the module docstring)."""
    _, cfa_off, rbp_off, ra_off, kind, arg = row
    if kind == _RSP:
        cfa = sp + cfa_off
    elif kind == _RBP:
        cfa = bp + cfa_off
    elif kind == _PLT:
        cfa = sp + cfa_off + (8 if (pc & 15) >= arg else 0)
    elif kind == _SIGNAL:
        return _signal_step(sp, base, stack)
    elif kind == _STOP:
        return StopReason.COMPLETE
    else:
        return StopReason.UNSUPPORTED
    cfa &= _MASK64
    if cfa <= sp:
        return StopReason.BAD_CFA
    ra = _word(stack, cfa + ra_off - base)
    if ra < 0:
        return _miss(cfa + ra_off - base)
    if rbp_off:
        bp = _word(stack, cfa + rbp_off - base)
        if bp < 0:
            return _miss(cfa + rbp_off - base)
    return (ra, cfa, bp, False)


def _signal_step(sp: int, base: int, stack: StackBytes) -> _Step:
    """The interrupted registers from the ucontext at rsp (``__restore_rt``)."""
    at = sp - base
    pc = _word(stack, at + SIGFRAME_RIP)
    new_bp = _word(stack, at + SIGFRAME_RBP)
    new_sp = _word(stack, at + SIGFRAME_RSP)
    if pc < 0 or new_bp < 0 or new_sp < 0:
        return _miss(at + SIGFRAME_RIP)
    return (pc, new_sp, new_bp, True)


def _fp_step(bp: int, base: int, stack: StackBytes) -> _Step:
    """One step by the frame pointer: [rbp] is the caller's rbp, [rbp + 8] the return address."""
    if not bp:
        return StopReason.FP_END
    at = bp - base
    next_bp = _word(stack, at)
    ra = _word(stack, at + 8)
    if next_bp < 0 or ra < 0:
        return _miss(at)
    if next_bp and next_bp <= bp:
        next_bp = 0  # frames only go up the stack
    return (ra, bp + 16, next_bp, False)


def _word(stack: StackBytes, offset: int) -> int:
    """The u64 at ``offset`` in the copy, or -1 when it is not all inside."""
    if offset < 0 or offset + 8 > len(stack):
        return -1
    value: int = _WORD.unpack_from(stack, offset)[0]
    return value


def _miss(offset: int) -> StopReason:
    return StopReason.BELOW_SP if offset < 0 else StopReason.SHORT_COPY
