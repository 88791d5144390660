"""Samples of threads and processes that exit: every one counted reaches the profile.

Each run ends 1.8 s after start with threads or processes exiting in a
different order (all at once, one by one, the main thread first, a parent
before its children). The workload prints each process's own CPU time as it
ends; the samples must come to that CPU time x Hz, within 5% plus the
sampling noise of a shared CPU (see ``allowed``), in the BPF phase (a
launched command) and in the perf_event phase (``-p`` of a running process,
sampled while BPF compiles).
"""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import pytest

from tests.bpf.test_early import total, wait_for_perf_fds, wait_for_threads
from tests.conftest import BPFTOP

HZ = 199
RUN_S = 1.8


def cpu_reported(stdout: str) -> float:
    """The CPU seconds the workload's processes reported as they ended."""
    lines = [line for line in stdout.splitlines() if line.startswith("cpu_s=")]
    assert lines, f"the workload reported no CPU time: {stdout!r}"
    return sum(float(line.partition("=")[2]) for line in lines)


def allowed(expected: float, share: float) -> float:
    """5%, plus sampling noise: a per-CPU cpu-clock tick lands on whoever runs,
    so with a CPU share p the count is binomial (3 sd: 3 * sqrt(n * (1 - p)))."""
    share = min(1.0, max(0.0, share))
    return 0.05 * expected + 3 * math.sqrt(expected * (1 - share)) + 3


def check_rate(samples: int, cpu_s: float, processes: int, threads: int, detail: str) -> None:
    """``samples`` against ``cpu_s`` x HZ; the share of a CPU the target's
    threads had is their CPU time over the CPUs they could use for RUN_S."""
    assert cpu_s > 0.1, f"the workload hardly ran ({cpu_s:.2f} CPU-s): {detail}"
    expected = cpu_s * HZ
    cpus = min(processes * threads, os.cpu_count() or 1)
    share = cpu_s / (RUN_S * cpus)
    assert abs(samples - expected) <= allowed(expected, share), (
        f"{samples} samples for {cpu_s:.3f} CPU-s x {HZ} Hz = {expected:.0f}: {detail}"
    )


@pytest.mark.parametrize(
    ("mode", "count", "children"),
    [
        ("threads", 4, False),  # all threads end together, main joins them
        ("staggered", 4, False),  # one thread ends every 0.45 s
        ("leader", 4, False),  # the main thread exits first: the process lives on
        ("children", 2, True),  # --children: two processes of two threads, parent waits
        ("orphans", 2, True),  # --children: the parent exits before its children
    ],
)
def test_exiting_threads_and_children_keep_their_samples(
    workloads: Path, tmp_path: Path, mode: str, count: int, children: bool
) -> None:
    out = tmp_path / f"{mode}.folded"
    follow = ["--children"] if children else []
    result = subprocess.run(
        [str(BPFTOP), "record", "-F", str(HZ), "-o", str(out), *follow, "--",
         str(workloads / "exits"), mode, str(RUN_S), str(count)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    processes, threads = (count, 2) if children else (1, count)
    check_rate(total(out), cpu_reported(result.stdout), processes, threads, result.stderr)


def test_exiting_threads_sampled_before_bpf_keep_their_samples(
    workloads: Path, tmp_path: Path
) -> None:
    """-p of a running process whose threads end one by one while BCC may still
    compile: the perf_event samples (and BPF's, after a hand-over) all count."""
    out = tmp_path / "early.folded"
    target = subprocess.Popen(
        [str(workloads / "exits"), "staggered", str(RUN_S), "4"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "EXITS_WAIT": "1"},
    )  # fmt: skip
    bpftop = subprocess.Popen(
        [str(BPFTOP), "record", "-p", str(target.pid), "-F", str(HZ), "-d", "60", "-o", str(out)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_perf_fds(bpftop.pid)
        wait_for_threads(bpftop.pid, 4)  # main, collector, rings, compile
        stdout, _ = target.communicate("g", timeout=60)
        _, err = bpftop.communicate(timeout=120)
    finally:
        for proc in (target, bpftop):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert bpftop.returncode == 0, err
    assert f"bpftop: process {target.pid} exited" in err, err  # one line says why it ended
    check_rate(total(out), cpu_reported(stdout), 1, 4, err)
