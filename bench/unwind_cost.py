"""Kernel cost of user-stack unwinding per sample (BPF run-time stats).

    sudo .venv/bin/python -m bench.unwind_cost [--seconds 4] [--hz 999]

For each case, samples a workload for a few seconds and divides the run time
the kernel accounts to our programs (tail calls included: they run inside the
entry program's run) by the samples it counted: frame pointers with
``bpf_get_stackid`` on the frame-pointer build of ``chain``, then the
.eh_frame walker on ``chain_nofp`` (about 9 frames), ``deep_nofp`` at depth 100
and at depth 130 (the walker's 128-frame cap). Prints the mean user frames per
sample with each figure. Numbers include the cheap runs for other processes'
samples that the tgid filter rejects, so they slightly underestimate; the
machine is shared, so run it on a quiet one for final figures. Also reports
the walker's map memory for a python3 that has imported ~30 shared libraries.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

from bpftop.bpf.program import CpuSampler
from bpftop.symbols.unwind.cache import UnwindCache, unwind_cache_dir
from bpftop.tui.collect.unwind_feed import UnwindFeed
from tests.conftest import WORKLOADS

CASES: tuple[tuple[str, str, dict[str, str], str], ...] = (
    ("frame pointers (bpf_get_stackid)", "chain", {}, "fp"),
    ("walker, chain_nofp", "chain_nofp", {}, "auto"),
    ("walker, depth 100", "deep_nofp", {"DEPTH": "100"}, "auto"),
    ("walker, depth 130 (capped)", "deep_nofp", {"DEPTH": "130"}, "auto"),
)
MANY_LIBS = (
    "import ssl, sqlite3, ctypes, decimal, json, hashlib, zlib, bz2, lzma, socket, select, "
    "array, math, cmath, _asyncio, _bisect, _blake2, _csv, _datetime, _elementtree, _heapq, "
    "_json, _multibytecodec, _pickle, _posixsubprocess, _queue, _random, _struct, mmap, "
    "readline, _uuid, _statistics, unicodedata, binascii, fcntl, grp, termios, resource, time\n"
    "while True: time.sleep(1)"
)


def _sample(program: str, env: dict[str, str], unwind: str, hz: int, seconds: float) -> str:
    target = subprocess.Popen([str(WORKLOADS / program), "600"], env={**os.environ, **env})
    try:
        with CpuSampler(hz, unwind=unwind) as sampler:
            sampler.load()
            feed = None
            if sampler.unwinder is not None:
                feed = UnwindFeed(target.pid).start()
                feed.attach(sampler.unwinder)
                feed.ready.wait(60)
            sampler.set_targets([target.pid])
            sampler.drain()
            before = sampler.prog_stats()
            sampler.start()
            time.sleep(seconds)
            tick = sampler.drain()
            spent = sampler.prog_stats()
            if feed is not None:
                feed.close()
    finally:
        target.kill()
        target.wait()
    samples = tick.total_samples
    frames = sum(len(s.user_stack) * s.count for s in tick.samples) / max(samples, 1)
    ns = (spent.run_time_ns - before.run_time_ns) / max(samples, 1)
    return f"{ns / 1000:.2f} µs per sample, {frames:.1f} user frames on average, {samples} samples"


def _memory_for_many_libraries() -> str:
    target = subprocess.Popen(["/usr/bin/python3", "-c", MANY_LIBS])
    try:
        time.sleep(1.5)
        with CpuSampler(99, unwind="auto") as sampler:
            sampler.load()
            assert sampler.unwinder is not None
            feed = UnwindFeed(target.pid, cache=UnwindCache(unwind_cache_dir())).start()
            feed.attach(sampler.unwinder)
            feed.ready.wait(300)
            unwinder = sampler.unwinder
            libs = len({m.split()[-1] for m in _exec_file_maps(target.pid)})
            used = unwinder.memory_bytes()
            capacity = unwinder.preallocated_bytes()
            feed.close()
    finally:
        target.kill()
        target.wait()
    return (
        f"{libs} executable files mapped, {feed.tables_loaded} tables, "
        f"{unwinder.rows_used} rows: {used / 1024:.0f} KiB of rows, index and process entry in use "
        f"(rows and index arrays preallocated: {capacity / 2**20:.0f} MiB "
        f"for {unwinder.capacity_rows} rows)"
    )


def _exec_file_maps(pid: int) -> list[str]:
    with open(f"/proc/{pid}/maps") as stream:
        return [line for line in stream if " r-xp " in line and "/" in line]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--hz", type=int, default=999)
    args = parser.parse_args()
    for label, program, env, unwind in CASES:
        print(f"{label}: {_sample(program, env, unwind, args.hz, args.seconds)}", flush=True)
    print(f"memory: {_memory_for_many_libraries()}")


if __name__ == "__main__":
    main()
