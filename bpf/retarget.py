"""Programs loaded as copies of compiled functions with one map swapped.

Owns :func:`retarget`, :func:`load_retargeted` and its two uses. A copy is a
function's instructions, as BCC compiled them, with every load of one map
loading another; it is loaded under its own name through libbcc the way
BCC's ``load_func`` loads a function, and kept in ``bpf.funcs`` (BCC's
attach calls find it there by name; its cleanup closes it). The kernel
verifies each copy as it would a compiled one; the compile is spared.

- :func:`load_walker_copy`: the .eh_frame walker (``unwind_walk``, a
  perf-event program) for kprobe-type and tracepoint-type handlers
  (bpf/probe_stacks.py) tail-calls through ``unwind_progs_kp`` /
  ``unwind_progs_tp`` instead of ``unwind_progs`` (a tail call stays within
  its type). As two more C functions they cost every compile 0.85 -> 0.77
  CPU-s (medians of 5 interleaved compiles).
- :func:`load_slot_copies`: each handler's slot-1 copy (``on_cpu_sample_1``,
  ...; bpf/attach.py) reads its slot from ``slot1`` instead of ``slot0``
  (bpftop.bpf.c's ``handler_slot``). As six more C functions they cost every
  compile 0.68 -> 0.85 CPU-s (medians of 4 interleaved compiles).
"""

from __future__ import annotations

import ctypes as ct
from collections.abc import Iterable
from typing import Any

WALKER, WALKER_ARRAY = b"unwind_walk", b"unwind_progs"
SLOT0, SLOT1 = b"slot0", b"slot1"
BPF_LD_IMM64 = 0x18  # BPF_LD | BPF_IMM | BPF_DW: two instruction slots
BPF_PSEUDO_MAP_FD = 1  # its source register when the immediate is a map fd
INSN = 8


def retarget(code: bytes, old_fd: int, new_fd: int) -> bytes:
    """``code`` (BPF instructions) with every load of map ``old_fd`` loading
    map ``new_fd`` instead; ValueError when it loads ``old_fd`` nowhere."""
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
    if not found:
        raise ValueError(f"the function loads map fd {old_fd} nowhere")
    return bytes(out)


def load_retargeted(
    bpf: Any, program_types: Any, source: bytes, name: bytes, swap: tuple[bytes, bytes], kind: str
) -> Any:
    """Load compiled function ``source`` as a ``kind`` program (an attribute
    of ``program_types``: ``bcc.BPF``) named ``name``, with map ``swap[0]``
    swapped for map ``swap[1]``; its ``BPF.Function``. Raises OSError when the
    kernel refuses it."""
    from bcc.libbcc import lib

    module = bpf.module
    start, size = lib.bpf_function_start(module, source), lib.bpf_function_size(module, source)
    old, new = (bpf[table].map_fd for table in swap)
    code = retarget(ct.string_at(start, size), old, new)
    buffer = ct.create_string_buffer(code, len(code))
    fd = lib.bcc_func_load(
        module, getattr(program_types, kind), name, buffer, len(code),
        lib.bpf_module_license(module), lib.bpf_module_kern_version(module),
        0, None, 0, None, -1,
    )  # fmt: skip
    if fd < 0:
        raise OSError(ct.get_errno(), f"the kernel refused {name.decode()}")
    function = program_types.Function(bpf, name, fd)
    bpf.funcs[name] = function
    return function


def load_walker_copy(bpf: Any, program_types: Any, name: bytes, array: bytes, kind: str) -> Any:
    """Load ``unwind_walk`` as a ``kind`` program named ``name`` that
    tail-calls through ``array``; its ``BPF.Function``."""
    return load_retargeted(bpf, program_types, WALKER, name, (WALKER_ARRAY, array), kind)


def load_slot_copies(bpf: Any, program_types: Any, handlers: Iterable[tuple[bytes, str]]) -> None:
    """Put 1 in ``slot1`` and load each of ``handlers`` (a compiled slot-0
    handler, its program type's name) as its slot-1 copy ``NAME_1``."""
    bpf[SLOT1][ct.c_int(0)] = ct.c_uint32(1)
    for name, kind in handlers:
        load_retargeted(bpf, program_types, name, name + b"_1", (SLOT0, SLOT1), kind)
