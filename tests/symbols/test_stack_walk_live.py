"""walk_copied_stack on real stacks: programs without frame pointers are
stopped with ptrace at many points, their registers and 16 KiB of stack are
copied (what a perf sample with PERF_SAMPLE_STACK_USER carries), and the walk
with ProcessTables' lookup must reach main and end complete at _start.
Also times the walk (µs per walk of a ~20-frame stack)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bpftop.symbols.symbolizer import Symbolizer
from bpftop.symbols.unwind.cache import UnwindCache
from bpftop.symbols.unwind.process_tables import ProcessTables
from bpftop.symbols.unwind.stack_walk import TableLookup, UserRegs, WalkResult, walk_copied_stack
from bpftop.symbols.unwind.table import RowKind
from tests.symbols.conftest import FIXTURES, Running
from tests.symbols.user_stack import Snapshot, snapshot

CHAIN = ("c", "b", "a", "run", "main")
STOPS = 20
SYSTEM_PYTHON = Path("/usr/bin/python3")
START_CHAIN = ("__libc_start_call_main", "__libc_start_main", "_start")


@pytest.fixture(autouse=True)
def _need_ptrace() -> None:
    if os.geteuid() != 0:
        pytest.skip("ptrace of another process and /proc/PID/mem need root here")


def _spawn(*argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, env=env)
    time.sleep(0.3)  # into its loop
    assert proc.poll() is None
    return proc


@pytest.fixture
def chain_nofp(workloads: Path) -> Iterator[int]:
    # No arguments: it spins forever and never calls clock_gettime (the vdso).
    proc = _spawn(str(workloads / "chain_nofp"))
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def unwind_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One table cache for the module: libc is built once, not per test."""
    return tmp_path_factory.mktemp("unwind")


def _tables(unwind_dir: Path, pid: int) -> tuple[ProcessTables, TableLookup]:
    tables = ProcessTables(UnwindCache(str(unwind_dir)))
    tables.build_missing(pid)
    assert not tables.missing(pid)
    return tables, tables.lookup_for(pid)


def _names(pid: int, result: WalkResult) -> list[str]:
    frames = Symbolizer(inline_frames=False).user_frames(pid, result.addresses)
    return [frame.label for frame in frames]


def test_chain_walks_reach_main_and_start_at_every_stop(chain_nofp: int, unwind_dir: Path) -> None:
    _, lookup = _tables(unwind_dir, chain_nofp)
    symbolizer = Symbolizer(inline_frames=False)
    seen_leaves = set()
    for _ in range(STOPS):
        snap = snapshot(chain_nofp)
        result = walk_copied_stack(snap.regs, snap.stack, lookup, fp_fallback=False)
        names = [f.label for f in symbolizer.user_frames(chain_nofp, result.addresses)]
        assert result.complete, (result.reason, names)
        assert tuple(names[-3:]) == START_CHAIN, names
        from_main = names.index("main")
        leaf = names[0]
        assert leaf in CHAIN, names
        assert tuple(names[: from_main + 1]) == CHAIN[CHAIN.index(leaf) :], names
        seen_leaves.add(leaf)
        time.sleep(0.01)
    assert len(seen_leaves) >= 2, seen_leaves  # stopped at different points


def test_without_tables_the_frame_pointer_walk_does_not_reach_main(
    chain_nofp: int, tmp_path: Path
) -> None:  # a cache of its own: nothing built
    """The same stacks with no tables built: what the walker adds over frame pointers."""
    tables = ProcessTables(UnwindCache(str(tmp_path / "unwind")))
    lookup = tables.lookup_for(chain_nofp)
    assert tables.missing(chain_nofp)
    snap = snapshot(chain_nofp)
    without = walk_copied_stack(snap.regs, snap.stack, lookup, fp_fallback=False)
    assert without.addresses == (snap.regs.ip,) and without.reason == "no table"
    assert "main" not in _names(chain_nofp, walk_copied_stack(snap.regs, snap.stack, lookup))


def test_system_python_walk_reaches_start_through_libc(unwind_dir: Path) -> None:
    if not SYSTEM_PYTHON.exists():
        pytest.fail(f"{SYSTEM_PYTHON} is needed (Debian's python3)")
    code = "def spin():\n    while True: pass\ndef outer():\n    spin()\nouter()\n"
    proc = _spawn(str(SYSTEM_PYTHON), "-c", code)
    try:
        _, lookup = _tables(unwind_dir, proc.pid)
        symbolizer = Symbolizer(inline_frames=False)
        for _ in range(5):
            snap = snapshot(proc.pid)
            result = walk_copied_stack(snap.regs, snap.stack, lookup, fp_fallback=False)
            names = [f.label for f in symbolizer.user_frames(proc.pid, result.addresses)]
            assert result.complete, (result.reason, names)
            # main (stripped) tail-calls Py_BytesMain, so it has no frame of its own.
            tail = ("Py_BytesMain", "__libc_start_call_main", "__libc_start_main", "_start")
            assert tuple(names[-4:]) == tail, names[-8:]
            assert names.count("_PyEval_EvalFrameDefault") >= 1, names
    finally:
        proc.kill()
        proc.wait()


def test_walk_cost_per_twenty_frames(workloads: Path, unwind_dir: Path) -> None:
    """~20 frames (deep_nofp at DEPTH=16: recurse x 16, run, main, libc, _start)."""
    env = {**os.environ, "DEPTH": "16"}
    proc = _spawn(str(workloads / "deep_nofp"), env=env)
    try:
        _, lookup = _tables(unwind_dir, proc.pid)
        snap = snapshot(proc.pid)
        result = walk_copied_stack(snap.regs, snap.stack, lookup)
        assert result.complete and 20 <= len(result.addresses) <= 22, result
        per_walk_us = _time_walks(snap, lookup)
    finally:
        proc.kill()
        proc.wait()
    # Reported, not asserted (timings belong to benchmarks): run with -s to see it.
    print(f"\nwalk_copied_stack: {per_walk_us:.1f} µs per {len(result.addresses)}-frame walk")
    sys.stdout.flush()


def _time_walks(snap: Snapshot, lookup: TableLookup, walks: int = 2000) -> float:
    regs = UserRegs(snap.regs.ip, snap.regs.sp, snap.regs.bp)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(walks):
            walk_copied_stack(regs, snap.stack, lookup)
        best = min(best, (time.perf_counter() - start) / walks * 1e6)
    return best


@pytest.fixture(scope="module")
def walkprog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("walkprog") / "walkprog"
    flags = ["-O2", "-g", "-fomit-frame-pointer", "-fno-optimize-sibling-calls", "-pthread"]
    subprocess.run(["gcc", *flags, "-o", str(out), str(FIXTURES / "walkprog.c")], check=True)
    return out


def test_walk_crosses_a_signal_frame(
    walkprog: Path, run: Callable[..., Running], unwind_dir: Path
) -> None:
    prog = run(walkprog, "signal")
    time.sleep(0.1)  # into the handler's loop
    _, lookup = _tables(unwind_dir, prog.pid)
    symbolizer = Symbolizer(inline_frames=False)
    for _ in range(5):
        snap = snapshot(prog.pid)
        result = walk_copied_stack(snap.regs, snap.stack, lookup, fp_fallback=False)
        names = [f.label for f in symbolizer.user_frames(prog.pid, result.addresses)]
        assert result.complete, (result.reason, names)
        # __restore_rt has no symbol in Debian's libc: find it by its row kind.
        kinds = [_row_kind(lookup, pc - (at > 0)) for at, pc in enumerate(result.addresses)]
        at = kinds.index(RowKind.SIGNAL)
        assert names[:at] == ["spin_forever", "in_handler", "handler"][-at:], names
        assert names[at + 1] == "__pthread_kill_implementation", names  # its exact pc
        assert names[-5:] == ["interrupted", "main", *START_CHAIN], names


def _row_kind(lookup: TableLookup, pc: int) -> RowKind | None:
    found = lookup(pc)
    row = None if found is None else found[0].raw_row(pc - found[1])
    return None if row is None else RowKind(row[4])


def test_thread_walk_ends_at_clone3(
    walkprog: Path, run: Callable[..., Running], unwind_dir: Path
) -> None:
    prog = run(walkprog, "thread")
    _, lookup = _tables(unwind_dir, prog.pid)
    symbolizer = Symbolizer(inline_frames=False)
    snap = snapshot(prog.addrs["tid"])
    result = walk_copied_stack(snap.regs, snap.stack, lookup, fp_fallback=False)
    names = [f.label for f in symbolizer.user_frames(prog.pid, result.addresses)]
    assert result.complete, (result.reason, names)
    assert names == ["spin_forever", "thread_spin", "worker", "start_thread", "clone3"], names
