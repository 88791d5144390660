"""CPU cost of unwind tables for several processes, cold (empty table cache).

    .venv/bin/python -m bench.unwind_targets_bench [--processes 2]

Starts N python3 processes (one binary, the same libraries) and builds their
tables the way the feed does (one shared ProcessTables): CPU seconds of this
process for all N, against the same for one process. Files are built once,
so N processes should cost about what one does. No BPF is needed: the cost is
the user-space build (symbols/unwind/eh_frame.py).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import tempfile
import time

from bpftop.symbols.elf.code_ranges import code_ranges
from bpftop.symbols.unwind.cache import UnwindCache
from bpftop.symbols.unwind.process_tables import ProcessTables

PYTHON = "/usr/bin/python3"


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def build_for(pids: list[int]) -> tuple[float, int]:
    """(CPU seconds, files built) for the tables of ``pids``, from a cold cache."""
    with tempfile.TemporaryDirectory() as cache_dir:
        tables = ProcessTables(UnwindCache(cache_dir))
        start = _cpu_s()
        for pid in pids:
            for code in code_ranges(pid):
                tables.load(code)
        return _cpu_s() - start, tables.loads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    procs = [
        subprocess.Popen([PYTHON, "-c", "import time; time.sleep(120)"])
        for _ in range(args.processes)
    ]
    try:
        time.sleep(0.5)  # let the loader map the libraries
        pids = [p.pid for p in procs]
        one_s, one_files = build_for(pids[:1])
        all_s, all_files = build_for(pids)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    print(f"1 process of python3: {one_s:.2f} CPU s, {one_files} files built")
    print(f"{args.processes} processes of python3: {all_s:.2f} CPU s, {all_files} files built")
    print(f"ratio {all_s / one_s:.2f} (1.0: nothing built twice)")


if __name__ == "__main__":
    main()
