"""CPython's ``-X perf`` trampolines: how to unwind through them, how to tell them.

From 3.12, ``python -X perf`` runs every Python function's frame through a
small trampoline of its own, copied into anonymous executable memory (an
"arena" of many copies) and named ``py::QUALNAME:FILE`` in the perf map.
The copies have no ``.eh_frame``, so the stack walkers need a rule for them,
and their names double the Python frames the interpreter walker already
gives, so the merge drops them (:func:`is_python_trampoline`).

Owns :func:`all_code_ranges`: a process's executable file mappings
(:func:`~bpftop.symbols.elf.code_ranges.code_ranges`) and its trampoline arenas,
each a range whose rows come with it; and :func:`trampoline_table`: given
the first bytes of an anonymous executable mapping (read from the process's
memory), the unwind table of the arena when they are one of CPython's x86-64
trampoline shapes (seen on 3.12.1, 3.13.0, Debian's 3.13.5 and 3.14.10)::

    [endbr64] sub $8,%rsp;  call *%rcx; add $8,%rsp; ret      (3.12, 3.13)
    [endbr64] push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret  (3.14)

else None. A trampoline's only call is ``call *%rcx``, so the one place a
walk leaves it through its caller is that call's return address, where the
canonical frame address is rsp + 16, the return address at CFA - 8 and (the
``push %rbp`` shape) the caller's rbp at CFA - 16. The copies sit at a
stride that differs by version (11 bytes on 3.12.1, 16 or 32 later), so the
table is that one rule for the whole arena, right at every return address;
a sample whose own pc is in a trampoline's first or last instructions (a few
of each copy's 11-16 bytes) gets the same rule and may end its stack there.
"""

from __future__ import annotations

import os

from bpftop.symbols.elf.code_ranges import PROC_ROOT, CodeRange, code_ranges, read_maps_text
from bpftop.symbols.frame import Frame
from bpftop.symbols.proc.maps import parse_maps
from bpftop.symbols.unwind.cfa_rules import RowKind
from bpftop.symbols.unwind.table import UnwindRow, UnwindTable

ENDBR64 = bytes.fromhex("f30f1efa")
CALL_RCX = bytes.fromhex("ffd1")
# Each shape's name, its bytes (after an optional endbr64), whether it saves rbp.
SHAPES = (
    ("sub", bytes.fromhex("4883ec08") + CALL_RCX + bytes.fromhex("4883c408c3"), False),
    ("push", bytes.fromhex("554889e5") + CALL_RCX + bytes.fromhex("5dc3"), True),
)
PROBE_BYTES = 32  # how many bytes of a mapping's start :func:`trampoline_table` wants
PERF_MAP_PREFIX = "/tmp/perf-"
PYTHON_PREFIX = "py::"
CFA_OFFSET, RA_OFFSET, RBP_OFFSET = 16, -8, -16


def trampoline_table(start: bytes) -> UnwindTable | None:
    """The unwind table of a trampoline arena beginning with ``start``, or None."""
    code = start.removeprefix(ENDBR64)
    for name, shape, saves_rbp in SHAPES:
        if code.startswith(shape):
            rbp = RBP_OFFSET if saves_rbp else 0
            row = UnwindRow(0, RowKind.RSP, CFA_OFFSET, rbp, RA_OFFSET)
            return UnwindTable(row.packed(), f"python-perf-trampolines-{name}")
    return None


def all_code_ranges(
    pid: int, proc_root: str = PROC_ROOT, maps_text: str | None = None
) -> tuple[CodeRange, ...]:
    """``code_ranges`` of ``pid``, then its ``-X perf`` trampoline arenas
    (vaddr 0 at each arena's start, the rule's rows with it)."""
    text = maps_text if maps_text is not None else read_maps_text(pid, proc_root)
    if text is None:
        return ()
    files = code_ranges(pid, proc_root, text)
    anonymous = [e for e in parse_maps(text) if e.executable and not e.path]
    if not anonymous or not files:
        return files
    found: list[CodeRange] = []
    try:
        with open(f"{proc_root}/{pid}/mem", "rb", buffering=0) as mem:
            for entry in anonymous:
                try:
                    table = trampoline_table(os.pread(mem.fileno(), PROBE_BYTES, entry.start))
                except OSError:
                    continue
                if table is not None:
                    name = f"[{table.source}]"
                    found.append(
                        CodeRange(
                            entry.start, entry.end, entry.start, name, "", (0, 0, 0, 0),
                            table.packed, table.source,
                        )
                    )  # fmt: skip
    except OSError:
        return files
    return (*files, *found)


def is_python_trampoline(frame: Frame) -> bool:
    """Whether ``frame`` was named ``py::...`` by a perf map: a ``-X perf`` trampoline."""
    name = frame.function
    return (
        name is not None
        and name.startswith(PYTHON_PREFIX)
        and frame.module.startswith(PERF_MAP_PREFIX)
    )
