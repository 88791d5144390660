"""Every probe kind this kernel supports, on workloads built to produce known
counts and stacks; the kinds it does not support fail with a clear error."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpftop.bpf.probes import ProbeSpecError, parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.raw import RawTick
from bpftop.bpf.resolve import UnsupportedProbeError, kprobes_available
from bpftop.symbols.symbolizer import Symbolizer

N_CALLS = 1_000_000  # a uprobe hit costs ~16-19 µs here: ~20 s


class Held:
    """A `probed` workload waiting on stdin; `go()` lets it run to the end."""

    def __init__(self, workloads: Path, mode: str, n: str, program: str = "probed") -> None:
        self.path = workloads / program
        self.proc = subprocess.Popen([str(self.path), mode, n], stdin=subprocess.PIPE)
        self.pid = self.proc.pid
        _wait_until_blocked(self.pid)
        self.symbols = Symbolizer()
        self.symbols.prepare(self.pid, preload=True)

    def go(self, timeout_s: float = 120) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"g")
        self.proc.stdin.close()
        assert self.proc.wait(timeout_s) == 0

    def names(self, stack: tuple[int, ...]) -> tuple[str, ...]:
        """Function names, outermost first."""
        frames = self.symbols.user_frames(self.pid, stack)
        return tuple(reversed([f.function or "?" for f in frames]))

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _wait_until_blocked(pid: int) -> None:
    """Until the workload sleeps in its first read (libraries mapped, maps final)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "S" and "libc" in Path(f"/proc/{pid}/maps").read_text():
            return
        time.sleep(0.005)
    raise AssertionError(f"workload {pid} did not start")


@pytest.fixture(scope="module")
def sampler() -> Iterator[CpuSampler]:
    """One compiled program for the whole module: probes switch by attach/detach."""
    with CpuSampler(99) as s:
        s.load()
        s.set_targets([])
        s.start()
        yield s


def run(sampler: CpuSampler, held: Held, spec: str) -> RawTick:
    try:
        sampler.set_targets([held.pid])
        sampler.switch(parse_spec(spec))
        held.go()
        time.sleep(0.05)
        return sampler.drain()
    finally:
        held.kill()


def test_uprobe_counts_a_million_calls_exactly(sampler: CpuSampler, workloads: Path) -> None:
    held = Held(workloads, "calls", str(N_CALLS))
    tick = run(sampler, held, f"uprobe:{workloads / 'probed'}:counted_call")
    assert tick.total_samples == N_CALLS
    assert tick.dropped_samples == 0 and tick.lost_events == 0
    (sample,) = tick.samples  # one thread, one stack
    assert held.names(sample.user_stack)[-3:] == ("main", "run_calls", "counted_call")


def test_tracepoint_counts_writes_exactly(sampler: CpuSampler, workloads: Path) -> None:
    held = Held(workloads, "writes", "50000")
    tick = run(sampler, held, "tracepoint:syscalls:sys_enter_write")
    by_stack = Counter[tuple[str, ...]]()
    for s in tick.samples:
        by_stack[held.names(s.user_stack)] += s.count
        assert s.kernel_stack, "a tracepoint hit has a kernel stack"
    (stack, count), *_ = by_stack.most_common()
    assert count == 50000 and tick.total_samples == 50000
    # The leaf is libc's write wrapper, which keeps no frame pointer, so a
    # frame-pointer walk from inside it skips its caller (run_writes).
    assert stack[-2] == "main" and "write" in stack[-1], stack


def test_uprobe_on_a_library_resolved_through_the_target_maps(
    sampler: CpuSampler, workloads: Path
) -> None:
    """`c` is the libc the process maps; write(2) wrappers are called N times."""
    held = Held(workloads, "writes", "20000")
    tick = run(sampler, held, "uprobe:c:write")
    assert tick.total_samples == 20000
    # libc's write does not start with `push %rbp`, so the kernel does not
    # add the return address at its entry: its caller is skipped (frame pointers).
    stacks = {held.names(s.user_stack)[-2:] for s in tick.samples}
    assert stacks == {("main", "write")}, stacks


def test_uretprobe_weights_stacks_by_latency(sampler: CpuSampler, workloads: Path) -> None:
    """timed() takes 3 ms via slow_path and 1 ms via fast_path, equally often:
    equal call counts, three quarters of the time under slow_path."""
    held = Held(workloads, "latency", "100")
    tick = run(sampler, held, f"uretprobe:{workloads / 'probed'}:timed")
    calls, time_ns = Counter[str](), Counter[str]()
    for s in tick.samples:
        names = held.names(s.user_stack)
        assert names[-1] == "timed"
        calls[names[-2]] += s.count
        time_ns[names[-2]] += s.weight_ns
    assert calls == {"slow_path": 100, "fast_path": 100}
    share = time_ns["slow_path"] / sum(time_ns.values())
    assert 0.70 <= share <= 0.80, f"slow_path has {share:.0%} of the time"
    assert time_ns["slow_path"] >= 100 * 3_000_000


def test_offcpu_attributes_blocked_time_to_the_waiting_function(
    sampler: CpuSampler, workloads: Path
) -> None:
    """long_wait sleeps 7 ms, short_wait 3 ms, in turn: ~70% of off-CPU time is long_wait."""
    held = Held(workloads, "sleeps", "2")
    tick = run(sampler, held, "offcpu")
    time_ns = Counter[str]()
    for s in tick.samples:
        names = held.names(s.user_stack)
        waiter = next((n for n in names if n.endswith("_wait")), "other")
        time_ns[waiter] += s.weight_ns
        if s.count:
            assert s.kernel_stack, "blocked in the kernel: a kernel stack"
    total = sum(time_ns.values())
    assert 1.8e9 <= total <= 2.3e9, f"{total / 1e9:.2f} s off-CPU in a 2 s sleeper"
    share = time_ns["long_wait"] / total
    assert 0.65 <= share <= 0.75, f"long_wait has {share:.0%} of the off-CPU time"


def test_offcpu_minimum_drops_short_blocks(sampler: CpuSampler, workloads: Path) -> None:
    """With a 5 ms minimum only the 7 ms waits count (a 3 ms wait may overrun
    5 ms now and then on a loaded machine: allow a few)."""
    held = Held(workloads, "sleeps", "1")
    tick = run(sampler, held, "offcpu:5000")
    blocks = Counter[str]()
    for s in tick.samples:
        blocks[held.names(s.user_stack)[-1]] += s.count
    assert blocks["long_wait"] >= 50, blocks
    assert blocks["short_wait"] <= 0.1 * blocks["long_wait"], blocks


def test_software_event_counts_page_faults(sampler: CpuSampler, workloads: Path) -> None:
    """touch_pages faults in 5,000 fresh pages: one count each (period 1)."""
    held = Held(workloads, "pages", "5000")
    tick = run(sampler, held, "software:page-faults:1")
    faults = Counter[str]()
    for s in tick.samples:
        faults[held.names(s.user_stack)[-1]] += s.count
    assert faults["touch_pages"] == 5000, faults


def test_hardware_events_fail_clearly_without_a_pmu(sampler: CpuSampler) -> None:
    if Path("/sys/bus/event_source/devices/cpu").exists():
        pytest.skip("this machine has a hardware PMU")
    before = sampler.probe
    with pytest.raises(UnsupportedProbeError, match="hardware event cycles is not supported"):
        sampler.switch(parse_spec("hardware:cycles"))
    assert sampler.probe == before


def test_kprobes_fail_naming_the_kernel_option(sampler: CpuSampler) -> None:
    if kprobes_available():
        pytest.skip("this kernel has kprobes")
    with pytest.raises(UnsupportedProbeError, match="CONFIG_KPROBES"):
        sampler.switch(parse_spec("kprobe:vfs_read"))


def test_rejected_specs_leave_the_running_probe_counting(
    sampler: CpuSampler, workloads: Path
) -> None:
    probed = workloads / "probed"
    held = Held(workloads, "calls", "1000")
    try:
        sampler.set_targets([held.pid])
        sampler.switch(parse_spec(f"uprobe:{probed}:counted_call"))
        with pytest.raises(ProbeSpecError, match="did you mean: counted_call"):
            sampler.switch(parse_spec(f"uprobe:{probed}:counted_cal"))
        with pytest.raises(ProbeSpecError, match="did you mean: sched:sched_switch"):
            sampler.switch(parse_spec("tracepoint:sched:sched_swich"))
        with pytest.raises(ProbeSpecError, match=r"matches \d+ functions, more than 200"):
            sampler.switch(parse_spec("uprobe:c:*"))
        with pytest.raises(ProbeSpecError, match="no binary or library 'nosuchlib'"):
            sampler.switch(parse_spec("uprobe:nosuchlib:f"))
        assert sampler.probe == f"uprobe:{probed}:counted_call"
        held.go()
        time.sleep(0.05)
        assert sampler.drain().total_samples == 1000
    finally:
        held.kill()


def test_glob_attaches_every_match(sampler: CpuSampler, workloads: Path) -> None:
    """`*_path` matches slow_path and fast_path: both are counted."""
    held = Held(workloads, "latency", "20")
    tick = run(sampler, held, f"uprobe:{workloads / 'probed'}:*_path")
    leaves = Counter[str]()
    for s in tick.samples:
        leaves[held.names(s.user_stack)[-1]] += s.count
    assert leaves == {"slow_path": 20, "fast_path": 20}
