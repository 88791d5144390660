"""Test helper: what a perf sample with PERF_SAMPLE_REGS_USER and
PERF_SAMPLE_STACK_USER would carry, taken from a live process with ptrace.

:func:`snapshot` stops the process (PTRACE_ATTACH), reads its user registers
(PTRACE_GETREGS: x86-64 ``user_regs_struct``, 27 u64), copies up to
``size`` bytes of its stack from rsp through /proc/PID/mem (clipped at the end
of the mapping, as the kernel's copy would be), and lets it run again
(PTRACE_DETACH). Needs root or a child process (ptrace_scope).
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

from bpftop.symbols.proc.maps import ProcessMaps
from bpftop.symbols.unwind.stack_walk import UserRegs

PTRACE_GETREGS = 12
PTRACE_ATTACH = 16
PTRACE_DETACH = 17
WALL = 0x40000000
# user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi
# orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs.
USER_REGS_WORDS = 27
RBP, RIP, RSP = 4, 16, 19

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
_libc.ptrace.restype = ctypes.c_long


@dataclass(frozen=True)
class Snapshot:
    regs: UserRegs
    stack: bytes


def _ptrace(request: int, pid: int, data: object = None) -> None:
    if _libc.ptrace(request, pid, None, data) == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"ptrace({request}, {pid}): {os.strerror(err)}")


def snapshot(pid: int, size: int = 16384) -> Snapshot:
    """Stop ``pid`` (a process or one thread's tid), take its registers and
    stack copy, and let it go on."""
    _ptrace(PTRACE_ATTACH, pid)
    try:
        _, status = os.waitpid(pid, WALL)  # __WALL: ``pid`` may be a thread
        assert os.WIFSTOPPED(status), f"not stopped: {status:#x}"
        words = (ctypes.c_uint64 * USER_REGS_WORDS)()
        _ptrace(PTRACE_GETREGS, pid, ctypes.addressof(words))
        regs = UserRegs(words[RIP], words[RSP], words[RBP])
        stack = _copy_stack(pid, regs.sp, size)
    finally:
        _ptrace(PTRACE_DETACH, pid, 0)
    return Snapshot(regs, stack)


def _copy_stack(pid: int, sp: int, size: int) -> bytes:
    with open(f"/proc/{pid}/maps") as stream:
        mapping = ProcessMaps.from_text(stream.read()).find(sp)
    assert mapping is not None, f"rsp {sp:#x} is unmapped"
    size = min(size, mapping.end - sp)
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        return os.pread(fd, size, sp)
    finally:
        os.close(fd)
