"""The .eh_frame walker's copies for other program types, made from its one compiled body.

Owns :func:`load_walker_copy` and :func:`retarget`. unwind.bpf.c has the
walker once (``unwind_walk``, loaded as a perf-event program). Its copies for
kprobe-type and tracepoint-type handlers (bpf/probe_stacks.py) are the same
instructions with the one program array they tail-call swapped for their own
(``unwind_progs`` -> ``unwind_progs_kp`` / ``unwind_progs_tp``: a tail call
stays within its type), loaded under their own names through libbcc the way
BCC's ``load_func`` loads a function, and kept in ``bpf.funcs`` (BCC's cleanup
closes them). Compiled as two more C functions, the copies cost every compile
0.85 -> 0.77 CPU-s (medians of 5 interleaved compiles); the kernel verifies
each copy as before.
"""

from __future__ import annotations

import ctypes as ct
from typing import Any

WALKER, WALKER_ARRAY = b"unwind_walk", b"unwind_progs"
BPF_LD_IMM64 = 0x18  # BPF_LD | BPF_IMM | BPF_DW: two instruction slots
BPF_PSEUDO_MAP_FD = 1  # its source register when the immediate is a map fd
INSN = 8


def retarget(code: bytes, old_fd: int, new_fd: int) -> bytes:
    """``code`` (BPF instructions) with its one load of map ``old_fd`` loading
    map ``new_fd`` instead; ValueError unless there is exactly one."""
    out, found, at = bytearray(code), 0, 0
    while at + INSN <= len(out):
        if out[at] != BPF_LD_IMM64:
            at += INSN
            continue
        imm = int.from_bytes(out[at + 4 : at + 8], "little", signed=True)
        if out[at + 1] >> 4 == BPF_PSEUDO_MAP_FD and imm == old_fd:
            out[at + 4 : at + 8] = new_fd.to_bytes(4, "little", signed=True)
            found += 1
        at += 2 * INSN
    if found != 1:
        raise ValueError(f"the walker loads map fd {old_fd} {found} times, not once")
    return bytes(out)


def load_walker_copy(bpf: Any, program_types: Any, name: bytes, array: bytes, kind: str) -> Any:
    """Load ``unwind_walk`` as a ``kind`` program (an attribute of
    ``program_types``: ``bcc.BPF``) named ``name`` that tail-calls through
    ``array``; its ``BPF.Function``. Raises OSError when the kernel refuses it."""
    from bcc.libbcc import lib

    module = bpf.module
    start, size = lib.bpf_function_start(module, WALKER), lib.bpf_function_size(module, WALKER)
    code = retarget(ct.string_at(start, size), bpf[WALKER_ARRAY].map_fd, bpf[array].map_fd)
    buffer = ct.create_string_buffer(code, len(code))
    fd = lib.bcc_func_load(
        module, getattr(program_types, kind), name, buffer, len(code),
        lib.bpf_module_license(module), lib.bpf_module_kern_version(module),
        0, None, 0, None, -1,
    )  # fmt: skip
    if fd < 0:
        raise OSError(ct.get_errno(), f"the kernel refused the walker's copy {name.decode()}")
    function = program_types.Function(bpf, name, fd)
    bpf.funcs[name] = function
    return function
