"""Unwind-table benchmark: how long a file's unwind table takes to build, and to load.

    .venv/bin/python -m bench.unwind_bench

- cold build (symbols/unwind/eh_frame.py's decoder, no disk cache) of libc.so.6 and
  python3.11: best of 3, wall and this process's CPU;
- warm load of the same from the on-disk cache (a second run): best of 5;
- rows, FDEs and row kinds of each table.
"""

from __future__ import annotations

import sys
import tempfile
import time

from bpftop.symbols.unwind.cache import UnwindCache

FILES = ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11")


def _best(action, repeat: int) -> tuple[float, float]:
    """(best wall s, best CPU s) of ``repeat`` calls."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        action()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        for path in FILES:
            cold, cold_cpu = _best(lambda p=path: UnwindCache(None).load(p), 3)
            cache = UnwindCache(folder)
            table = cache.load(path)
            assert table is not None
            warm = _best(lambda p=path: UnwindCache(folder).load(p), 5)[0]
            kinds = {k.name: n for k, n in sorted(table.kinds().items())}
            print(f"{path}: cold build {cold:.3f} s ({cold_cpu:.3f} CPU-s), "
                  f"warm load {warm * 1000:.1f} ms, "
                  f"{len(table)} rows from {table.fdes} FDEs ({table.failed_fdes} failed), "
                  f"{len(table.packed) / 1024:.0f} KiB; {kinds}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
