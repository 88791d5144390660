"""Overhead of sampling on the target: fixed work alone vs. under bpftop.

Runs ``split -n ROUNDS`` (fixed work) alone, then while bpftop's collector
samples it at each frequency, alternating the runs, and reports the median
ratio of wall time (and of the target's CPU time). The target starts stopped
and is continued only once sampling is live, so every run is fully sampled.

    sudo .venv/bin/python -m bench.overhead [--rounds 180000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path

from bpftop.bpf.program import CpuSampler
from bpftop.tui.collector import Collector
from bpftop.tui.model.snapshot import Phase, Snapshot
from tests.conftest import WORKLOADS


def run_once(rounds: int, hz: int | None) -> tuple[float, float]:
    """(wall seconds, target CPU seconds) for one fixed-work run."""
    proc = subprocess.Popen(
        ["sh", "-c", f'kill -STOP $$; exec "$0" -n {rounds}', str(WORKLOADS / "split")]
    )
    while Path(f"/proc/{proc.pid}/stat").read_text().split()[2] != "T":
        time.sleep(0.001)
    collector = None
    if hz is not None:
        ready = threading.Event()

        def on_snapshot(snap: Snapshot) -> None:
            if snap.phase is Phase.SAMPLING:
                ready.set()

        collector = Collector(proc.pid, CpuSampler(hz), interval_s=1.0)
        collector.start(on_snapshot, lambda err: ready.set())
        ready.wait(30)
    started = time.perf_counter()
    os.kill(proc.pid, signal.SIGCONT)
    _, _status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if collector is not None:
        collector.stop()
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=180_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--hz", type=int, nargs="+", default=[99, 999])
    args = parser.parse_args()
    modes: list[int | None] = [None, *args.hz]
    results: dict[int | None, list[tuple[float, float]]] = {m: [] for m in modes}
    for run in range(args.runs):
        for mode in modes:  # alternate: alone, 99, 999, alone, ...
            results[mode].append(run_once(args.rounds, mode))
        print(
            f"run {run + 1}/{args.runs}: "
            + ", ".join(f"{m or 'alone'}={results[m][-1][0]:.3f}s" for m in modes),
            flush=True,
        )
    base_wall = statistics.median(w for w, _ in results[None])
    base_cpu = statistics.median(c for _, c in results[None])
    print(f"alone: median wall {base_wall:.3f} s, cpu {base_cpu:.3f} s")
    for hz in args.hz:
        wall = statistics.median(w for w, _ in results[hz])
        cpu = statistics.median(c for _, c in results[hz])
        print(
            f"{hz} Hz: median wall {wall:.3f} s ({100 * (wall / base_wall - 1):+.2f}%), "
            f"cpu {cpu:.3f} s ({100 * (cpu / base_cpu - 1):+.2f}%)"
        )


if __name__ == "__main__":
    main()
