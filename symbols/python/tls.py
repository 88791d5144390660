"""Where a thread-local variable is, from the machine code that reads it (x86-64, glibc).

Owns :class:`TlsAccess` and :func:`tls_access`. CPython 3.13+ keeps each
thread's own ``PyThreadState`` in the thread-local ``_Py_tss_tstate``, and
stripped builds have no symbol for it; but ``PyThreadState_GetUnchecked``
(public API, always exported) is a single read of it, whose instructions say
where it is:

- local exec, the executable's static TLS (x86-64 TLS variant II: blocks
  below the thread pointer): ``mov %fs:DISP32, %rax`` (``64 48 8b 04 25``):
  the variable is at ``fsbase + DISP32`` (negative);
- initial exec: ``mov GOT(%rip), %rax; mov %fs:(%rax), %rax``: the offset is
  the GOT entry's value (filled by the dynamic linker);
- general dynamic (a shared libpython): ``lea GOT(%rip), %rdi; call
  __tls_get_addr``: the GOT pair holds the module id and the variable's
  offset in the module's block; the block is ``dtv[module]``, glibc's
  dynamic thread vector at ``fsbase + 8`` with 16-byte entries (a module
  loaded at start-up has its block set for every thread).

``fsbase`` is the thread pointer the kernel keeps (``task->thread.fsbase``).

That variable is NULL while the thread has let go of the GIL (a blocking
call, ``time.sleep``, hashing): CPython 3.13+ detaches the thread state
then. The gilstate TSS key (``_PyRuntime.autoTSSkey``, a ``Py_tss_t``:
``{int initialized; unsigned key}``) keeps it bound to the thread all along,
so :func:`tss_key_offset` finds that key's place in ``_PyRuntime`` from
``PyGILState_GetThisThreadState`` (also exported), which starts by testing
it: ``cmpl $0, KEY(%rip)`` in an executable, or ``mov GOT(%rip), %rax``
(``&_PyRuntime``) then ``lea DISP(%rax), %reg`` in a shared libpython.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

ENDBR64 = bytes.fromhex("f30f1efa")
SUB_RSP_8 = bytes.fromhex("4883ec08")
MOV_FS_ABS = bytes.fromhex("64488b0425")  # mov %fs:disp32, %rax
MOV_GOT_RAX = bytes.fromhex("488b05")  # mov rel32(%rip), %rax
MOV_FS_RAX = bytes.fromhex("64488b00")  # mov %fs:(%rax), %rax
LEA_GOT_RDI = bytes.fromhex("66488d3d")  # data16 lea rel32(%rip), %rdi (the TLS GD sequence)
CMPL_RIP_0 = bytes.fromhex("833d")  # cmpl $imm8, rel32(%rip)
PUSH_RBX = b"\x53"
LEA_DISP_RAX = bytes.fromhex("488d")  # lea disp32(%rax), %reg: ModRM 0x80 | reg << 3


@dataclass(frozen=True, slots=True)
class TlsAccess:
    """``module`` 0: the variable is at ``fsbase + offset``; else at ``offset``
    into the block of TLS module ``module`` (``dtv[module]``)."""

    module: int
    offset: int


def tls_access(code: bytes, addr: int, read_u64: Callable[[int], int | None]) -> TlsAccess | None:
    """How the function at ``addr`` whose first bytes are ``code`` reads its
    thread-local (``read_u64``: the process's memory, for GOT entries); None
    when its code is none of the three sequences."""
    at = 0
    for prefix in (ENDBR64, SUB_RSP_8):
        if code.startswith(prefix, at):
            at += len(prefix)
    if code.startswith(MOV_FS_ABS, at) and len(code) >= at + 9:
        disp = int.from_bytes(code[at + 5 : at + 9], "little", signed=True)
        return TlsAccess(0, disp)
    if code.startswith(MOV_GOT_RAX, at) and code.startswith(MOV_FS_RAX, at + 7):
        got = addr + at + 7 + int.from_bytes(code[at + 3 : at + 7], "little", signed=True)
        offset = read_u64(got)
        if offset is None:
            return None
        return TlsAccess(0, offset - (1 << 64) if offset >> 63 else offset)
    if code.startswith(LEA_GOT_RDI, at) and len(code) >= at + 8:
        got = addr + at + 8 + int.from_bytes(code[at + 4 : at + 8], "little", signed=True)
        module, offset = read_u64(got), read_u64(got + 8)
        if not module or offset is None or module > 0xFFFF:
            return None
        return TlsAccess(module, offset)
    return None


def tss_key_offset(
    code: bytes, addr: int, runtime: int, read_u64: Callable[[int], int | None]
) -> int | None:
    """The offset in ``_PyRuntime`` (at ``runtime``) of the gilstate TSS key
    that ``PyGILState_GetThisThreadState`` (at ``addr``, first bytes
    ``code``) reads; None when its code is neither sequence."""
    at = 4 if code.startswith(ENDBR64) else 0
    if code.startswith(CMPL_RIP_0, at) and len(code) >= at + 7 and code[at + 6] == 0:
        return (
            addr + at + 7 + int.from_bytes(code[at + 2 : at + 6], "little", signed=True) - runtime
        )
    if code.startswith(MOV_GOT_RAX, at) and len(code) >= at + 7 + 1 + 7:
        got = addr + at + 7 + int.from_bytes(code[at + 3 : at + 7], "little", signed=True)
        at += 7
        if code.startswith(PUSH_RBX, at):
            at += 1
        modrm = code[at + 2] if len(code) > at + 2 else 0
        if code.startswith(LEA_DISP_RAX, at) and modrm & 0xC7 == 0x80 and read_u64(got) == runtime:
            return int.from_bytes(code[at + 3 : at + 7], "little", signed=True)
    return None
