"""Samples before BPF counts: perf_event from launch, a clean hand-over, a fallback.

The compile takes seconds (many more on a loaded machine); these check that
samples arrive long before it ends, that the perf_event and BPF samples add
up to the target's CPU time x Hz (no gap, nothing counted twice), and that a
program BPF cannot load still leaves a CPU profile.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from pathlib import Path

from bpftop.bpf.program import CpuSampler
from bpftop.tui.collect.collector import Collector
from bpftop.tui.collect.early import BPF_FP, EarlyFeed
from bpftop.tui.collect.early_stacks import EARLY_FP, EARLY_WALKED
from bpftop.tui.model.snapshot import Snapshot
from tests.bpf.test_record import parse_folded, record
from tests.conftest import BPFTOP

BROKEN_PROGRAM = r"""
#include <uapi/linux/ptrace.h>
BPF_HASH(targets, u32, u8, TARGETS_SIZE);
int on_cpu_sample(struct pt_regs *ctx) {
    u32 key = 1;
    u8 *val = targets.lookup(&key);
    return *val;   /* no NULL check: the verifier must refuse this */
}
"""


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reaped_cpu_s(proc: subprocess.Popen[bytes]) -> float:
    """The CPU time of a child that ran to its end (rusage: microseconds, not ticks)."""
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime


def wait_for_perf_fds(pid: int, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if any("perf_event" in str(fd.readlink()) for fd in Path(f"/proc/{pid}/fd").iterdir()):
                return
        except OSError:
            pass
        time.sleep(0.005)
    raise AssertionError("bpftop never opened a perf event")


def wait_for_threads(pid: int, n: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while len(os.listdir(f"/proc/{pid}/task")) < n:
        assert time.monotonic() < deadline, "bpftop never started collecting"
        time.sleep(0.01)


def allowed(expected: float, share: float) -> float:
    """2% (the goal), plus sampling noise when the target shared its CPU: a
    per-CPU cpu-clock tick lands on whoever runs, so with a CPU share p the
    count is binomial (3 sd: 3 * sqrt(n * (1 - p))). Alone on a CPU: ~2%."""
    share = min(1.0, max(0.0, share))
    return 0.02 * expected + 3 * math.sqrt(expected * (1 - share)) + 3


def total(path: Path) -> int:
    return sum(parse_folded(path).values())


def test_first_five_seconds_count_the_target_cpu_time(workloads: Path, tmp_path: Path) -> None:
    """record -d 5 on a spinning target that runs (~4 s) only while bpftop samples:
    samples = its CPU time x Hz within 2% (perf_event samples, maybe BPF ones after)."""
    hz = 199
    target = subprocess.Popen([str(workloads / "chain"), "4"])  # stops itself 4 s after start
    os.kill(target.pid, signal.SIGSTOP)
    out = tmp_path / "five.folded"
    bpftop = subprocess.Popen(
        [str(BPFTOP), "record", "-p", str(target.pid), "-F", str(hz), "-d", "5", "-o", str(out)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_perf_fds(bpftop.pid)
        time.sleep(0.05)  # enabled right after opening
        before = cpu_s(target.pid)
        os.kill(target.pid, signal.SIGCONT)
        ran_from = time.monotonic()
        used = reaped_cpu_s(target) - before
        wall = time.monotonic() - ran_from
        _, err = bpftop.communicate(timeout=120)
    finally:
        if target.returncode is None:
            target.kill()
            target.wait()
    assert bpftop.returncode == 0, err
    assert used > 0.3, "the target ran"
    samples, expected = total(out), hz * used
    assert abs(samples - expected) <= allowed(expected, used / wall), (samples, expected, err)


def test_target_that_exits_before_the_compile_keeps_its_samples(
    workloads: Path, tmp_path: Path
) -> None:
    """A target that runs 1.5 s once bpftop samples, then exits (long before the
    compile ends): all its CPU time is sampled, and its stacks are named.
    (Held until bpftop has checked its arguments and started collecting -- its
    threads exist: on a busy machine Python's imports alone can take 1.5 s, and
    a pid gone before the check is refused.)"""
    hz = 199
    target = subprocess.Popen([str(workloads / "chain"), "-n", "1000000000"])
    os.kill(target.pid, signal.SIGSTOP)
    out = tmp_path / "short.folded"
    started = time.monotonic()
    bpftop = subprocess.Popen(
        [str(BPFTOP), "record", "-p", str(target.pid), "-F", str(hz), "-d", "30", "-o", str(out)],
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_perf_fds(bpftop.pid)
    sampling_after_s = time.monotonic() - started
    wait_for_threads(bpftop.pid, 4)  # main, collector, rings, compile
    before = cpu_s(target.pid)
    os.kill(target.pid, signal.SIGCONT)
    time.sleep(1.5)
    used = cpu_s(target.pid) - before
    share = used / 1.5
    target.kill()
    target.wait()
    _, err = bpftop.communicate(timeout=120)
    took_s = time.monotonic() - started
    assert bpftop.returncode == 0, err
    stacks = parse_folded(out)
    samples, expected = sum(stacks.values()), hz * used
    assert abs(samples - expected) <= allowed(expected, share), (samples, expected, err)
    chains = sum(n for s, n in stacks.items() if {"main", "run", "a"} <= set(s))
    assert chains >= 0.9 * samples, stacks.most_common(3)
    print(f"perf events open {sampling_after_s:.2f} s after launch; record done in {took_s:.2f} s")


def test_hand_over_to_bpf_without_gap_or_double_count(workloads: Path) -> None:
    """perf_event samples, then BPF's: together CPU time x Hz within 2%."""
    hz = 199
    target = subprocess.Popen([str(workloads / "chain"), "-n", "1000000000"])
    os.kill(target.pid, signal.SIGSTOP)
    seen: list[Snapshot] = []
    collector = Collector(target.pid, CpuSampler(hz), interval_s=0.5)
    before = cpu_s(target.pid)
    collector.start(seen.append, lambda err: seen.clear())
    try:
        time.sleep(0.05)
        os.kill(target.pid, signal.SIGCONT)
        ran_from = time.monotonic()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            qualities = dict(seen[-1].stats.stack_quality) if seen else {}
            if qualities.get(BPF_FP, 0) > 2 * hz:
                break
            time.sleep(0.2)
        os.kill(target.pid, signal.SIGSTOP)  # nothing runs while the last drain happens
        time.sleep(0.1)
        used = cpu_s(target.pid) - before
        share = used / (time.monotonic() - ran_from)
        collector.stop()
    finally:
        target.kill()
        target.wait()
    stats = seen[-1].stats
    qualities = dict(stats.stack_quality)
    early = qualities.get(EARLY_FP, 0) + qualities.get(EARLY_WALKED, 0)
    assert early > 0 and qualities.get(BPF_FP, 0) > 0, qualities
    assert stats.early_samples == early
    expected = hz * used
    assert abs(stats.total_samples - expected) <= allowed(expected, share), (stats, expected)
    assert seen[-1].tree.total_count == stats.total_samples


def test_bpf_that_cannot_load_leaves_a_perf_event_profile(workloads: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.bpf.c"
    bad.write_text(BROKEN_PROGRAM)
    target = subprocess.Popen([str(workloads / "chain"), "60"])
    out = tmp_path / "fallback.folded"
    try:
        before = cpu_s(target.pid)
        env = {**os.environ, "BPFTOP_BPF_SOURCE": str(bad)}
        # -d long enough for the (fast, include-free) compile to fail first.
        result = subprocess.run(
            [str(BPFTOP), "record", "-p", str(target.pid), "-d", "8", "-o", str(out)],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        used = cpu_s(target.pid) - before
    finally:
        target.kill()
        target.wait()
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and "perf_event only" in warning[0], result.stderr
    assert "rejected" in warning[0], warning
    stacks = parse_folded(out)
    # The load fails in the first seconds of the 8: sampling that stopped there
    # would count a fraction of the CPU time the target had over the whole run.
    assert used > 1, "the target ran"
    assert sum(stacks.values()) > 0.7 * used * 99, "kept sampling after the load failed"
    assert any({"main", "run", "a"} <= set(s) for s in stacks)


def test_record_helper_still_works(workloads: Path, tmp_path: Path) -> None:
    """The early path leaves `record` with its usual one-line summary."""
    target = subprocess.Popen([str(workloads / "chain"), "30"])
    try:
        result = record(target.pid, tmp_path / "x.folded", "-d", "1")
    finally:
        target.kill()
        target.wait()
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stderr and total(tmp_path / "x.folded") > 0


def test_a_tick_keeps_no_sample_taken_after_its_cut(workloads: Path) -> None:
    """``tick(until_ns)``, the collector's last tick after stop(): the samples
    taken after the cut are not kept, those before it all are (a record's
    last tick came up to a second after -d ended, while the first stacks were
    symbolized: a 1 s record held 1.4 s of samples, bench.startup)."""
    hz = 199
    target = subprocess.Popen([str(workloads / "chain"), "-n", "1000000000"])
    try:
        feed, why = EarlyFeed.start(hz, [target.pid], False)
        assert feed is not None, why
        try:
            before, since = cpu_s(target.pid), time.monotonic()
            time.sleep(1.0)
            until_ns = time.monotonic_ns()
            share = (cpu_s(target.pid) - before) / (time.monotonic() - since)
            expected = hz * (cpu_s(target.pid) - before)
            time.sleep(1.0)  # sampled on, after the cut
            tick = feed.tick(until_ns, final=True).tick
        finally:
            feed.close()
    finally:
        target.kill()
        target.wait()
    assert abs(tick.total_samples - expected) <= allowed(expected, share), (tick, expected)
