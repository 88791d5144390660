"""Programs loaded as copies of compiled functions with one map swapped.

Owns :func:`retarget`, :func:`load_retargeted` and its two uses. A copy is a
function's instructions, as BCC compiled them, with every load of one map
loading another; it is loaded under its own name from the program's image
(bpf/program_image.py), as the image loads its own functions, and kept in ``bpf.funcs`` (BCC's
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

from bpftop.bpf.program_image import load_code, rewrite_map_loads

WALKER, WALKER_ARRAY = b"unwind_walk", b"unwind_progs"
SLOT0, SLOT1 = b"slot0", b"slot1"


def retarget(code: bytes, old_fd: int, new_fd: int) -> bytes:
    """``code`` (BPF instructions) with every load of map ``old_fd`` loading
    map ``new_fd`` instead; ValueError when it loads ``old_fd`` nowhere."""
    found = []

    def swap(fd: int) -> int:
        if fd != old_fd:
            return fd
        found.append(fd)
        return new_fd

    out = rewrite_map_loads(code, swap)
    if not found:
        raise ValueError(f"the function loads map fd {old_fd} nowhere")
    return out


def load_retargeted(
    bpf: Any, program_types: Any, source: bytes, name: bytes, swap: tuple[bytes, bytes], kind: str
) -> Any:
    """Load function ``source`` of ``bpf`` (an image's BPF object:
    bpf/program_image.py) as a ``kind`` program (an attribute of
    ``program_types``: ``bcc.BPF``) named ``name``, with map ``swap[0]``
    swapped for map ``swap[1]``; its ``BPF.Function``. Raises OSError when the
    kernel refuses it."""
    old, new = (bpf[table].map_fd for table in swap)
    code = retarget(bpf.dump_func(source), old, new)
    fd = load_code(bpf, name, code, getattr(program_types, kind))
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
