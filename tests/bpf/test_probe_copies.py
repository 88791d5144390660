"""The walkers' copies verified ahead on a thread (``copies_ahead``, as the
CLI makes the sampler): every copy gets loaded; a probe switch that comes
while the thread still verifies waits for it and walks its stacks (exact
counts, as tests/bpf/test_probe_stacks.py); run stats and drains read the
programs meanwhile; closing the program stops the thread first; a collector
sampling CPU has them all without a switch; a copy the kernel refuses leaves
the switch counting by frame pointers. The tests that need the thread
still running start it on a loaded program (its load's own thread is done
before the handlers are)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpftop.bpf import probe_copies
from bpftop.bpf.environment import import_bcc
from bpftop.bpf.probe_copies import ProbeCopies
from bpftop.bpf.probe_stacks import PROBE_WALKERS
from bpftop.bpf.probes import ProgramType, parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.tui.collect.collector import Collector
from bpftop.tui.collect.early import BPF_WALKER, BPF_WALKER_NOT_STARTED, bpf_qualities
from tests.bpf.test_collector import Watched
from tests.bpf.test_probe_stacks import HeldNoFp, by_stack, from_main, share

COPIES = {name for name, _, _ in PROBE_WALKERS} | {b"python_walk_kp", b"python_walk_tp"}


@pytest.fixture
def sampler() -> Iterator[CpuSampler]:
    """Loaded without its copies: the tests start the thread."""
    with CpuSampler(99, unwind="auto") as s:
        s.load()
        assert s.unwinder is not None and s.python is not None
        yield s


def _verify_ahead(sampler: CpuSampler) -> ProbeCopies:
    """Start the copies' thread now, as ``load()`` does with ``copies_ahead``."""
    bpf_types = import_bcc().BPF  # type: ignore[attr-defined]
    copies = sampler._copies = ProbeCopies(sampler._bpf, bpf_types, True, True, ahead=True)
    assert _verifying(copies)
    return copies


def _verifying(copies: ProbeCopies) -> bool:
    return copies._thread is not None and copies._thread.is_alive()


def _wait_for(copies: ProbeCopies | None) -> None:
    assert copies is not None and copies._thread is not None
    copies._thread.join(30)
    assert not copies._thread.is_alive()


def test_load_verifies_every_copy_on_a_thread() -> None:
    with CpuSampler(99, unwind="auto", copies_ahead=True) as sampler:
        sampler.load()
        _wait_for(sampler._copies)
        assert sampler._bpf.funcs.keys() >= COPIES


def test_without_copies_ahead_none_is_loaded(sampler: CpuSampler) -> None:
    assert sampler._copies is not None and sampler._copies._thread is None
    assert not sampler._bpf.funcs.keys() & COPIES


def test_the_program_is_read_while_copies_are_added(sampler: CpuSampler) -> None:
    """Run stats (a snapshot's) and dropped runs (a drain's) go over the loaded
    programs while the thread adds its copies to them."""
    sampler.set_targets([])
    sampler.start()
    copies, reads = _verify_ahead(sampler), 0
    while _verifying(copies):
        sampler.prog_stats()
        sampler._take_dropped()
        reads += 1
    assert reads > 1 and sampler._bpf.funcs.keys() >= COPIES


def test_a_switch_while_the_copies_are_verified_walks_its_stacks(
    sampler: CpuSampler, workloads: Path
) -> None:
    """The tracepoint-type copies come second on the thread: the switch waits
    for the kprobe-type ones, then has its own in its arrays."""
    held = HeldNoFp(workloads, sampler, "writes", "50000")
    try:
        sampler.set_targets([held.pid])
        sampler.start()
        copies = _verify_ahead(sampler)
        sampler.switch(parse_spec("tracepoint:syscalls:sys_enter_write"))
        held.go()
        tick = sampler.drain()
    finally:
        held.kill()
    assert tick.total_samples == 50000 and tick.dropped_samples == 0
    assert tick.walked_samples == 50000
    stacks = by_stack(tick, held)
    assert share(stacks, lambda s: from_main(s) == ("main", "run_writes", "write")) >= 0.99, stacks
    _wait_for(copies)
    assert sampler._bpf.funcs.keys() >= COPIES


def test_close_while_the_copies_are_verified_stops_their_thread(sampler: CpuSampler) -> None:
    copies = _verify_ahead(sampler)
    sampler.close()
    assert not _verifying(copies) and not sampler.loaded
    copies.ensure(ProgramType.TRACEPOINT)  # stopped: nothing is loaded into the freed program


def test_a_collector_sampling_cpu_verifies_them_ahead(workloads: Path) -> None:
    target = subprocess.Popen([str(workloads / "demo"), "60"])
    sampler = CpuSampler(99, unwind="auto", copies_ahead=True)
    watched = Watched(Collector(target.pid, sampler, interval_s=0.3))
    try:
        watched.wait(lambda s: bool(s.maps) and s.stats.total_samples > 0, 60)  # BPF's
        _wait_for(sampler._copies)
        assert sampler._bpf.funcs.keys() >= COPIES
        watched.collector.switch_probe("offcpu")
        watched.wait(lambda s: s.stats.probe == "offcpu", 10)
    finally:
        watched.collector.stop()
        target.kill()
        target.wait()


def test_a_copy_the_kernel_refuses_leaves_the_switch_counting_by_frame_pointers(
    sampler: CpuSampler, workloads: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No walker for the probe kind: the switch still counts every hit, by
    bpf_get_stackid, the stacks say the walker did not start, and the Python
    walker's copy is loaded regardless."""

    def refused(*_args: object) -> bool:
        raise OSError(13, "the kernel refused the walker's copy")

    monkeypatch.setattr(probe_copies, "load_probe_walker", refused)
    held = HeldNoFp(workloads, sampler, "writes", "20000")
    try:
        sampler.set_targets([held.pid])
        sampler.start()
        sampler.switch(parse_spec("tracepoint:syscalls:sys_enter_write"))
        held.go()
        tick = sampler.drain()
    finally:
        held.kill()
    assert tick.total_samples == 20000 and tick.dropped_samples == 0
    assert bpf_qualities(tick, walker=True) == {BPF_WALKER: 0, BPF_WALKER_NOT_STARTED: 20000}
    assert b"python_walk_tp" in sampler._bpf.funcs, "the Python walker's copy loads all the same"
