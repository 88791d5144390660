"""What the kernel's Python walker is told about one verified interpreter.

Owns :func:`walker_process`: a :class:`~bpftop.symbols.python.runtime.PythonRuntime`
(addresses and :class:`~bpftop.symbols.python.layout.PythonLayout`) as
bpf/python.bpf.c's ``struct python_proc`` wants it: where the thread's own
state is, and byte offsets turned into indices into the walker's two
80-byte reads (one at a frame, one at a code object's identity fields), or
a one-line reason when the layout does not fit those reads.
"""

from __future__ import annotations

from bpftop.bpf.python_walk import PythonProcess
from bpftop.symbols.python.runtime import PythonRuntime

WINDOW = 80  # python.bpf.c: PY_WINDOW_WORDS * 8


def walker_process(runtime: PythonRuntime) -> PythonProcess | str:
    """``runtime`` for the kernel walker, or why it cannot be walked."""
    layout = runtime.layout
    words = (layout.frame_code, layout.frame_previous, layout.frame_instr)
    base = min((*words, layout.frame_entry)) & ~7
    if any(w % 8 or w + 8 > base + WINDOW for w in words) or layout.frame_entry >= base + WINDOW:
        return "its frame fields do not fit one read"
    ident_base = layout.code_firstlineno & ~7
    pointers = (layout.code_filename, layout.code_qualname)
    if any(p % 8 or p < ident_base or p + 8 > ident_base + WINDOW for p in pointers):
        return "its code object fields do not fit one read"
    tls = None if runtime.tss_key_addr else runtime.tls
    return PythonProcess(
        tss_key_addr=runtime.tss_key_addr,
        tls_offset=tls.offset if tls else 0,
        gil_holder=runtime.gil_holder,
        gil_locked=runtime.gil_locked,
        tls_module=tls.module if tls else 0,
        tstate_cframe=layout.tstate_cframe,
        current_frame=layout.current_frame,
        frame_window=base,
        frame_code=(layout.frame_code - base) // 8,
        frame_previous=(layout.frame_previous - base) // 8,
        frame_instr=(layout.frame_instr - base) // 8,
        frame_entry=layout.frame_entry - base,
        entry_owner=layout.entry_owner,
        code_tag_bits=layout.code_tag_bits,
        code_bytecode=layout.code_size,
        ident_base=ident_base,
        ident_firstlineno=layout.code_firstlineno - ident_base,
        ident_filename=(layout.code_filename - ident_base) // 8,
        ident_qualname=(layout.code_qualname - ident_base) // 8,
    )
