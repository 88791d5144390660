"""CPython's -X perf trampolines: the arena's code shapes are recognized from
their bytes (as read from real interpreters: pyenv 3.12.1 and 3.13.0, Debian's
3.13.5 and 3.14.10), a walk through one returns to the trampoline's caller
with the rbp it had, and only perf-map frames named ``py::`` count as
trampolines. The real-kernel walk is in tests/bpf/test_python_versions.py."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from bpftop.symbols.frame import Frame
from bpftop.symbols.unwind.perf_trampolines import (
    all_code_ranges,
    is_python_trampoline,
    trampoline_table,
)
from bpftop.symbols.unwind.stack_walk import UserRegs, walk_copied_stack
from bpftop.symbols.unwind.table import RowKind, UnwindRow, UnwindTable
from tests.pythons import PY313, PY314, Interpreter

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_split.py"

# The first 32 bytes of each arena, from /proc/PID/mem of `python -X perf`.
ARENAS = {
    "3.12.1 (11-byte copies)": "4883ec08ffd14883c408c3" * 2 + "4883ec08ffd14883c4",
    "3.13.0": ("4883ec08ffd14883c408c3" + "00" * 5) * 2,
    "3.13.5 (endbr64)": ("f30f1efa4883ec08ffd14883c408c3" + "00") * 2,
    "3.14.10 (push rbp)": "f30f1efa554889e5ffd15dc3" + "00" * 20,
}
SAVES_RBP = {"3.14.10 (push rbp)"}


@pytest.mark.parametrize("name", ARENAS)
def test_each_interpreters_arena_gets_one_rule_for_its_return_addresses(name: str) -> None:
    table = trampoline_table(bytes.fromhex(ARENAS[name]))
    assert table is not None
    rows = list(table.rows())
    rbp = -16 if name in SAVES_RBP else 0
    assert rows == [UnwindRow(0, RowKind.RSP, 16, rbp, -8)]


def test_two_shapes_get_two_tables_so_processes_share_each() -> None:
    sub = trampoline_table(bytes.fromhex(ARENAS["3.13.0"]))
    push = trampoline_table(bytes.fromhex(ARENAS["3.14.10 (push rbp)"]))
    again = trampoline_table(bytes.fromhex(ARENAS["3.13.5 (endbr64)"]))
    assert sub is not None and push is not None and again is not None
    assert sub.source != push.source
    assert sub.source == again.source


@pytest.mark.parametrize(
    "start",
    [
        b"\0" * 32,  # an arena not written yet
        bytes.fromhex("f30f1efa"),  # endbr64 alone
        bytes.fromhex("4883ec08ffd24883c408c3"),  # call *%rdx: not CPython's
        bytes.fromhex("554889e5e8000000005dc3"),  # a direct call
        bytes.fromhex("554889e5ffd15d"),  # cut short
        b"",
    ],
)
def test_other_code_is_no_arena(start: bytes) -> None:
    assert trampoline_table(start) is None


BIAS = 0x7F00_0000_0000  # the caller's file
ARENA = 0x7E00_0000_0000
SP = 0x7FFF_0000_1000


@pytest.mark.parametrize("name", ["3.13.5 (endbr64)", "3.14.10 (push rbp)"])
def test_a_walk_through_a_trampoline_reaches_its_caller(name: str) -> None:
    """leaf (frameless, called by the trampoline's `call *%rcx`) -> trampoline
    -> caller (an rbp-framed function) -> _start."""
    arena = trampoline_table(bytes.fromhex(ARENAS[name]))
    assert arena is not None
    caller = UnwindTable(
        b"".join(
            r.packed()
            for r in (
                UnwindRow(0x1000, RowKind.RBP, 16, -16, -8),
                UnwindRow(0x2000, RowKind.STOP),
                UnwindRow(0x3000, RowKind.GAP),
            )
        ),
        "caller",
    )

    def lookup(pc: int) -> tuple[UnwindTable, int] | None:
        if ARENA <= pc < ARENA + 0x10000:
            return arena, ARENA
        return (caller, BIAS) if BIAS <= pc < BIAS + 0x3000 else None

    saves_rbp = name in SAVES_RBP
    tramp_ra = ARENA + 0x40 + (10 if saves_rbp else 12)  # after `call *%rcx` in the third copy
    caller_bp = SP + 0x80  # the caller's frame: saved rbp, then its return address
    stack = bytearray(0x100)
    struct.pack_into("<Q", stack, 0, tramp_ra)  # the leaf's return address (CFA = SP + 8)
    # The trampoline's frame: SP+8 .. SP+24; its return address at CFA - 8.
    struct.pack_into("<Q", stack, 8, caller_bp if saves_rbp else 0xDEAD)
    struct.pack_into("<Q", stack, 16, BIAS + 0x1234)
    struct.pack_into("<Q", stack, 0x80, 0)
    struct.pack_into("<Q", stack, 0x88, BIAS + 0x2001)
    leaf = 0x7D00_0000_0000  # no table: its return address is read by a frameless rule
    leaf_table = UnwindTable(UnwindRow(0, RowKind.RSP, 8, 0, -8).packed(), "leaf")

    def with_leaf(pc: int) -> tuple[UnwindTable, int] | None:
        return (leaf_table, leaf) if leaf <= pc < leaf + 0x100 else lookup(pc)

    # Without the push, the caller's rbp is still in the register at the leaf.
    regs = UserRegs(leaf + 0x10, SP, 0x7777 if saves_rbp else caller_bp)
    result = walk_copied_stack(regs, bytes(stack), with_leaf)
    assert result.addresses == (leaf + 0x10, tramp_ra, BIAS + 0x1234, BIAS + 0x2001)
    assert result.complete


def test_only_perf_map_frames_named_py_are_trampolines() -> None:
    assert is_python_trampoline(Frame("py::burn:/x.py", "/tmp/perf-7.map", 0))
    assert not is_python_trampoline(Frame("py::burn:/x.py", "/usr/bin/python3.13", 0))
    assert not is_python_trampoline(Frame("LazyCompile:burn", "/tmp/perf-7.map", 0))
    assert not is_python_trampoline(Frame(None, "/tmp/perf-7.map", 0))


@pytest.mark.parametrize("python", [PY313, PY314], ids=str)
def test_a_live_interpreters_arena_is_a_code_range_with_its_table(python: Interpreter) -> None:
    """Read from the process as the feeds read it: every py:: entry of its
    perf map lies in an arena code_ranges found, with the shape's rule."""
    target = python.popen(WORKLOAD, "split", "30", options=("-X", "perf"), stdout=subprocess.PIPE)
    try:
        assert target.stdout is not None
        target.stdout.readline()
        ranges = all_code_ranges(target.pid)
        perf_map = (python.root or Path("/")) / f"tmp/perf-{target.pid}.map"
        entries = [line.split(None, 2) for line in perf_map.read_text().splitlines()]
    finally:
        target.kill()
        target.wait()
        perf_map.unlink(missing_ok=True)
    arenas = [r for r in ranges if r.rows]
    assert arenas and all(r.key == f"[{r.rows_source}]" for r in arenas), ranges
    starts = [int(start, 16) for start, _size, name in entries if name.startswith("py::")]
    assert len(starts) > 10
    assert all(any(r.start <= s < r.end for r in arenas) for s in starts)
    assert all(r.bias == r.start for r in arenas)
    assert len({r.key for r in arenas}) == 1
