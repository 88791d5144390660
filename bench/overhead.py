"""Overhead of sampling on the target: fixed work alone vs. under bpftop
(and, with ``--perf``, under ``perf record --call-graph dwarf``).

Runs a workload with ``-n ROUNDS`` (fixed work) alone, then while bpftop's
collector samples it at each frequency, alternating the runs, and reports the
median ratio of wall time (and of the target's CPU time). The target starts
stopped and is continued only once sampling is live, so every run is fully
sampled.

    sudo .venv/bin/python -m bench.overhead [--rounds 180000] [--runs 7]
    sudo .venv/bin/python -m bench.overhead --workload chain_nofp --rounds 4000 --perf
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from bpftop.bpf.program import CpuSampler
from bpftop.tui.collect.collector import Collector
from bpftop.tui.model.snapshot import Phase, Snapshot
from tests.conftest import WORKLOADS

PERF_ATTACH_S = 1.0  # perf record -p attaches in ~0.25 s here


def run_once(workload: str, rounds: int, mode: str, unwind: str) -> tuple[float, float]:
    """(wall seconds, target CPU seconds) for one fixed-work run; ``mode`` is
    "alone", "HZ" (bpftop) or "perf@HZ"."""
    proc = subprocess.Popen(
        ["sh", "-c", f'kill -STOP $$; exec "$0" -n {rounds}', str(WORKLOADS / workload)]
    )
    while Path(f"/proc/{proc.pid}/stat").read_text().split()[2] != "T":
        time.sleep(0.001)
    collector, perf = None, None
    if mode.startswith("perf@"):
        data = Path(tempfile.gettempdir()) / f"bpftop-overhead-{os.getpid()}.perf.data"
        perf = subprocess.Popen(
            ["perf", "record", "-q", "-F", mode[5:], "--call-graph", "dwarf", "-p",
             str(proc.pid), "-o", str(data)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(PERF_ATTACH_S)
    elif mode != "alone":
        ready = threading.Event()

        def on_snapshot(snap: Snapshot) -> None:
            if snap.phase is Phase.SAMPLING:
                ready.set()

        collector = Collector(proc.pid, CpuSampler(int(mode), unwind=unwind), interval_s=1.0)
        collector.start(on_snapshot, lambda err: ready.set())
        ready.wait(30)
    started = time.perf_counter()
    os.kill(proc.pid, signal.SIGCONT)
    _, _status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if collector is not None:
        collector.stop()
    if perf is not None:
        perf.wait(timeout=120)
        data.unlink(missing_ok=True)
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", default="split")
    parser.add_argument("--rounds", type=int, default=180_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--hz", type=int, nargs="+", default=[99, 999])
    parser.add_argument("--unwind", choices=("auto", "dwarf", "fp"), default="fp")
    parser.add_argument("--perf", action="store_true", help="also perf --call-graph dwarf")
    args = parser.parse_args()
    modes = ["alone", *map(str, args.hz), *([f"perf@{hz}" for hz in args.hz] if args.perf else [])]
    results: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    for run in range(args.runs):
        for mode in modes:  # alternate: alone, 99, 999, [perf@99, perf@999,] alone, ...
            results[mode].append(run_once(args.workload, args.rounds, mode, args.unwind))
        print(
            f"run {run + 1}/{args.runs}: "
            + ", ".join(f"{m}={results[m][-1][0]:.3f}s" for m in modes),
            flush=True,
        )
    base_wall = statistics.median(w for w, _ in results["alone"])
    base_cpu = statistics.median(c for _, c in results["alone"])
    print(f"{args.workload}, unwind {args.unwind}: alone median wall {base_wall:.3f} s, "
          f"cpu {base_cpu:.3f} s")  # fmt: skip
    for mode in modes[1:]:
        wall = statistics.median(w for w, _ in results[mode])
        cpu = statistics.median(c for _, c in results[mode])
        label = mode if mode.startswith("perf") else f"bpftop@{mode}"
        print(
            f"{label} Hz: median wall {wall:.3f} s ({100 * (wall / base_wall - 1):+.2f}%), "
            f"cpu {cpu:.3f} s ({100 * (cpu / base_cpu - 1):+.2f}%)"
        )


if __name__ == "__main__":
    main()
