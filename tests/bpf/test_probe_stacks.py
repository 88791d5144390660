"""Probe stacks walked from .eh_frame (uprobe, uretprobe, tracepoint, offcpu) on
``probed_nofp``, a build without frame pointers (no function keeps a frame):
they reach ``main`` and name the probed function's immediate caller, with the
exact counts of tests/bpf/test_probes.py. The same probes with the walker
switched off (the walker's mode map set to "fp" in the same program) lose
callers, so these tests fail if probe stacks stop being walked."""

from __future__ import annotations

import ctypes as ct
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bpftop.bpf.environment import import_bcc
from bpftop.bpf.probe_stacks import PROBE_WALKERS, load_probe_walker
from bpftop.bpf.probes import ProgramType, parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.raw import RawTick
from bpftop.bpf.unwinder import MODES
from bpftop.tui.collect.early import BPF_WALKER, BPF_WALKER_NOT_STARTED, bpf_qualities
from bpftop.tui.collect.unwind_feed import UnwindFeed
from tests.bpf.test_probes import Held

PROGRAM = "probed_nofp"
N_CALLS = 1_000_000  # as tests/bpf/test_probes.py
LATENCY = ("main", "run_latency")


class HeldNoFp(Held):
    """``probed_nofp MODE N`` waiting on stdin, its unwind tables in the walker."""

    def __init__(
        self, workloads: Path, sampler: CpuSampler, mode: str, n: str, tables: bool = True
    ) -> None:
        super().__init__(workloads, mode, n, PROGRAM)
        assert sampler.unwinder is not None
        self.feed: UnwindFeed | None = None
        if tables:
            self.feed = UnwindFeed(self.pid).start()
            self.feed.attach(sampler.unwinder)
            assert self.feed.ready.wait(120), "the unwind tables were not built"

    def kill(self) -> None:
        if self.feed is not None:
            self.feed.close()
        super().kill()


@pytest.fixture(scope="module")
def sampler() -> Iterator[CpuSampler]:
    with CpuSampler(99, unwind="auto") as s:
        s.load()
        s.set_targets([])
        s.start()
        LOADED_AT_START.update(s._bpf.funcs)
        yield s


LOADED_AT_START: set[bytes] = set()


def test_probe_walkers_load_on_first_use(sampler: CpuSampler) -> None:
    """Started without ``copies_ahead`` (the collector's way: see
    test_probe_copies.py), CPU sampling does not verify the probes' walker copies."""
    assert b"unwind_walk" in LOADED_AT_START
    assert not LOADED_AT_START & {name for name, _, _ in PROBE_WALKERS}


def set_mode(sampler: CpuSampler, mode: str) -> None:
    """Switch the loaded walker's mode (fp: every stack from bpf_get_stackid)."""
    sampler._bpf[b"unwind_mode"][ct.c_int(0)] = ct.c_uint32(MODES[mode])


def run(
    sampler: CpuSampler, workloads: Path, mode: str, n: str, spec: str, tables: bool = True
) -> tuple[RawTick, HeldNoFp]:
    held = HeldNoFp(workloads, sampler, mode, n, tables)
    try:
        sampler.set_targets([held.pid])
        sampler.switch(parse_spec(spec.replace("PROG", str(held.path))))
        held.go()
        time.sleep(0.05)
        return sampler.drain(), held
    finally:
        held.kill()


def by_stack(tick: RawTick, held: HeldNoFp, weighted: bool = False) -> Counter[tuple[str, ...]]:
    found = Counter[tuple[str, ...]]()
    for s in tick.samples:
        found[held.names(s.user_stack)] += s.weight_ns if weighted else s.count
    return found


def share(stacks: Counter[tuple[str, ...]], ok: Callable[[tuple[str, ...]], bool]) -> float:
    total = sum(stacks.values())
    return sum(n for s, n in stacks.items() if ok(s)) / max(1, total)


def from_main(stack: tuple[str, ...]) -> tuple[str, ...]:
    return stack[stack.index("main") :] if "main" in stack else ()


def test_uprobe_names_the_immediate_caller_and_counts_exactly(
    sampler: CpuSampler, workloads: Path
) -> None:
    tick, held = run(sampler, workloads, "calls", str(N_CALLS), "uprobe:PROG:counted_call")
    assert tick.total_samples == N_CALLS
    assert tick.dropped_samples == 0 and tick.lost_events == 0
    assert tick.walked_samples == N_CALLS
    stacks = by_stack(tick, held)
    full = share(stacks, lambda s: from_main(s) == ("main", "run_calls", "counted_call"))
    started = share(stacks, lambda s: "__libc_start_call_main" in s)
    assert full >= 0.99 and started >= 0.99, stacks


def test_uprobe_without_the_walker_misses_the_caller(sampler: CpuSampler, workloads: Path) -> None:
    """The reference: frame pointers alone cannot name counted_call's caller here."""
    set_mode(sampler, "fp")
    try:
        tick, held = run(sampler, workloads, "calls", "20000", "uprobe:PROG:counted_call")
    finally:
        set_mode(sampler, "auto")
    assert tick.total_samples == 20000 and tick.walked_samples == 0
    stacks = by_stack(tick, held)
    assert share(stacks, lambda s: "run_calls" in s) < 0.5, stacks


def test_offcpu_without_the_walker_does_not_reach_main(
    sampler: CpuSampler, workloads: Path
) -> None:
    set_mode(sampler, "fp")
    try:
        tick, held = run(sampler, workloads, "latency", "20", "offcpu")
    finally:
        set_mode(sampler, "auto")
    counts = by_stack(tick, held)
    assert tick.walked_samples == 0
    assert share(counts, lambda s: "main" in s) < 0.5, counts


def test_uprobe_on_libc_write_names_its_caller(sampler: CpuSampler, workloads: Path) -> None:
    """libc's write keeps no frame: its caller and main come from the tables."""
    tick, held = run(sampler, workloads, "writes", "20000", "uprobe:c:write")
    assert tick.total_samples == 20000
    stacks = by_stack(tick, held)
    assert share(stacks, lambda s: from_main(s) == ("main", "run_writes", "write")) >= 0.99, stacks


def test_tracepoint_stacks_walk_from_the_task_registers(
    sampler: CpuSampler, workloads: Path
) -> None:
    tick, held = run(sampler, workloads, "writes", "50000", "tracepoint:syscalls:sys_enter_write")
    assert tick.total_samples == 50000
    assert all(s.kernel_stack for s in tick.samples), "a tracepoint hit has a kernel stack"
    stacks = by_stack(tick, held)
    assert share(stacks, lambda s: from_main(s) == ("main", "run_writes", "write")) >= 0.99, stacks


def test_uretprobe_stacks_reach_main(sampler: CpuSampler, workloads: Path) -> None:
    tick, held = run(sampler, workloads, "latency", "50", "uretprobe:PROG:timed")
    calls = Counter[tuple[str, ...]]()
    for s in tick.samples:
        calls[from_main(held.names(s.user_stack))] += s.count
    assert calls == {
        ("main", "run_latency", "slow_path", "timed"): 50,
        ("main", "run_latency", "fast_path", "timed"): 50,
    }, calls
    assert tick.walked_samples == 100


def test_offcpu_stacks_reach_main(sampler: CpuSampler, workloads: Path) -> None:
    """timed() blocks in libc's clock_nanosleep (no frame pointers anywhere):
    the blocked time is under main;run_latency;slow_path (3/4) and fast_path."""
    tick, held = run(sampler, workloads, "latency", "100", "offcpu")
    counts = by_stack(tick, held)
    assert sum(counts.values()) >= 180  # 200 blocks (a wake-up may be missed: allow some)
    reached = share(counts, lambda s: s[-1] != "main" and "main" in s)
    print(f"offcpu: {reached:.2%} of {sum(counts.values())} blocks reach main")
    assert reached >= 0.95, counts
    time_ns = by_stack(tick, held, weighted=True)
    slow = share(time_ns, lambda s: from_main(s)[:4] == (*LATENCY, "slow_path", "timed"))
    fast = share(time_ns, lambda s: from_main(s)[:4] == (*LATENCY, "fast_path", "timed"))
    assert 0.65 <= slow <= 0.80 and slow + fast >= 0.95, (slow, fast)


def test_a_walker_that_cannot_run_leaves_counts_exact(sampler: CpuSampler, workloads: Path) -> None:
    """With the kprobe-type walker's array emptied (its tail call fails, as for
    a context it cannot walk), every hit is still counted once, by
    bpf_get_stackid, and the drain says no stack was walked."""
    load_probe_walker(sampler._bpf, import_bcc().BPF, ProgramType.KPROBE)  # type: ignore[attr-defined]
    array = sampler._bpf[b"unwind_progs_kp"]
    walker = sampler._bpf.funcs[b"unwind_walk_kp"]
    del array[ct.c_int(0)]
    try:
        tick, _ = run(sampler, workloads, "calls", "20000", "uprobe:PROG:counted_call")
    finally:
        array[ct.c_int(0)] = ct.c_int(walker.fd)
    assert tick.total_samples == 20000 and tick.dropped_samples == 0
    assert tick.walked_samples == 0
    assert bpf_qualities(tick, walker=True) == {BPF_WALKER: 0, BPF_WALKER_NOT_STARTED: 20000}


def test_uprobe_without_tables_still_names_the_caller(sampler: CpuSampler, workloads: Path) -> None:
    """Before a file's table is in (or for a file without one), a uprobe hit is
    still at a function's first instruction: its caller's return address is on
    top of the stack, so the caller is named (the frames above it need tables
    or frame pointers)."""
    tick, held = run(sampler, workloads, "calls", "20000", "uprobe:PROG:counted_call", tables=False)
    assert tick.total_samples == 20000
    stacks = by_stack(tick, held)
    assert share(stacks, lambda s: s[-2:] == ("run_calls", "counted_call")) >= 0.99, stacks
