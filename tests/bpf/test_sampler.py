"""The kernel side on its own: exact draining, bounded maps, exit events."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from bpftop.bpf.program import CpuSampler


def _cpu_s(pid: int) -> float:
    """CPU time (user + system) a process has used, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_fast_drains_lose_and_double_count_nothing(workloads: Path) -> None:
    """A thread sampled at F Hz yields F samples per second of its CPU time,
    however often we drain. (cpu-clock counts the task's CPU time, not wall
    time: a target preempted now and then is sampled less, and rightly so.)"""
    target = subprocess.Popen([str(workloads / "split"), "30"])
    hz, seconds = 499, 3.0
    try:
        with CpuSampler(hz) as sampler:
            sampler.load()
            sampler.set_targets([target.pid])
            sampler.drain()
            cpu_before = _cpu_s(target.pid)
            sampler.start()
            started = time.monotonic()
            total, drains = 0, 0
            while time.monotonic() - started < seconds:
                time.sleep(0.02)
                tick = sampler.drain()
                total += tick.total_samples
                drains += 1
                assert tick.lost_events == 0 and tick.dropped_samples == 0
            cpu_used = _cpu_s(target.pid) - cpu_before
            inactive = 1 - sampler.generation
            left = sampler.entries(f"counts{inactive}"), sampler.entries(f"stacks{inactive}")
            usage = {m.name: m for m in sampler.map_usage()}
            runs = sampler.prog_stats()
    finally:
        target.kill()
        target.wait()
    expected = hz * cpu_used
    assert drains > 50
    assert abs(total - expected) <= 0.05 * expected, f"{total} samples, expected ~{expected:.0f}"
    # The generation drained last was cleared: its maps are empty.
    assert left == (0, 0)
    counts, stacks = usage[f"counts{inactive}"], usage[f"stacks{inactive}"]
    assert 0 < counts.used <= counts.max_entries, "as of its last drain"
    assert stacks.kind == "stack_trace" and stacks.key_size == 4
    assert usage["targets"].used == 1
    # Kernel run-time stats see every sample (and a little more: other threads' hits
    # that the tgid filter rejects also run the program).
    assert runs.run_count >= total and runs.run_time_ns > 0


def test_stack_maps_do_not_fill_over_many_ticks(workloads: Path) -> None:
    """Small stack maps, many ticks: the failure rate does not climb as time goes on.

    Every sample in a spin loop has its own IP, so the demo makes hundreds of
    new distinct stacks per second; over 60 ticks that is several times the
    map's 512 slots. Were drained stacks not cleared, the map would fill and
    nearly every stack read would fail by the end.
    """
    target = subprocess.Popen([str(workloads / "demo"), "60"])
    rates = []
    try:
        with CpuSampler(999, stack_storage_size=512) as sampler:
            sampler.load()
            sampler.set_targets([target.pid])
            sampler.start()
            for _ in range(60):
                time.sleep(0.1)
                tick = sampler.drain()
                failed = sum(s.count for s in tick.samples if s.user_error)
                rates.append((failed, tick.total_samples))
            peak_stacks = max(
                m.used for m in sampler.map_usage() if m.name in ("stacks0", "stacks1")
            )
    finally:
        target.kill()
        target.wait()

    def rate(part: list[tuple[int, int]]) -> float:
        return sum(f for f, _ in part) / max(1, sum(n for _, n in part))

    first, last = rate(rates[:20]), rate(rates[-20:])
    assert last <= 0.2, f"{last:.0%} of stack reads failed in the last 2 s"
    assert last <= first + 0.05, f"failures climbed from {first:.0%} to {last:.0%}"
    assert peak_stacks < 512


def test_exit_event_of_the_main_thread(workloads: Path) -> None:
    with CpuSampler(99) as sampler:
        sampler.load()  # compile first: on a busy machine it can outlast a short target
        target = subprocess.Popen([str(workloads / "split"), "2"])
        sampler.set_targets([target.pid])
        sampler.start()
        target.wait()
        time.sleep(0.1)
        tick = sampler.drain()
    assert any(
        e.tgid == target.pid and e.tid == target.pid and e.comm == "split" for e in tick.exits
    )
