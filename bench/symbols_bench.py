"""Symbolization benchmark: lookup rates, index build and load times, index memory.

    .venv/bin/python -m bench.symbols_bench

- cached lookups per second (stacks of a live python3.11 process, every
  address already seen: the steady state of a live view), and the cost of the
  first sight of an address, without and with inline frames from DWARF;
- first index build (no disk cache) for libc and python3.11, with the debug
  files this machine has;
- the same two loaded from a warm on-disk cache (a second run of bpftop);
- inline chains of 30 random libc functions from libc's separate debug file:
  cold (pyelftools) against cached (a second run: :mod:`bpftop.symbols.dwarf.cache`),
  and the cost of writing that cache entry with 16 and with 256 units;
- memory held by the indexes of 50 shared libraries (tracemalloc);
- loading /proc/kallsyms (root: real addresses), best of 5.
"""

from __future__ import annotations

import gc
import glob
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable

from bpftop.symbols.dwarf.cache import EAGER_UNITS, DwarfCache, DwarfEntry
from bpftop.symbols.dwarf.index import DwarfIndex
from bpftop.symbols.elf.disk_cache import DiskCache
from bpftop.symbols.elf.index import ElfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.kallsyms import KernelSymbols
from bpftop.symbols.symbolizer import Symbolizer

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
PYTHON = "/usr/bin/python3.11"
STACK_DEPTH = 24
STACKS = 2_000
ROUNDS = 20


def _best_ms(action: Callable[[], None], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def lookups(inline_frames: bool) -> tuple[float, float]:
    """(first-sight µs per address, cached addresses per second) on a live python3.11."""
    target = subprocess.Popen(
        [PYTHON, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert target.stdout is not None and target.stdout.readline().strip() == "ready"
        sym = Symbolizer(elf_cache=ElfCache(), inline_frames=inline_frames)
        process = sym.prepare(target.pid, preload=True)
        assert process.maps is not None
        code = [e for e in process.maps.entries if e.executable and e.is_file]
        rng = random.Random(7)
        stacks = []
        for _ in range(STACKS):
            picks = (rng.choice(code) for _ in range(STACK_DEPTH))
            stacks.append([rng.randrange(e.start, e.end) for e in picks])
        started = time.perf_counter()
        for stack in stacks:  # first sight: every address resolved once (DWARF too)
            sym.user_frames(target.pid, stack)
        first_us = (time.perf_counter() - started) / (STACKS * STACK_DEPTH) * 1e6
        started = time.perf_counter()
        for _ in range(ROUNDS):
            for stack in stacks:
                sym.user_frames(target.pid, stack)
        elapsed = time.perf_counter() - started
    finally:
        target.kill()
        target.communicate()
    return first_us, ROUNDS * STACKS * STACK_DEPTH / elapsed


def first_build(path: str) -> tuple[float, str, int]:
    result: list[ElfIndex] = []

    def build() -> None:
        index = ElfCache().load(path)
        assert isinstance(index, ElfIndex)
        result.append(index)

    ms = _best_ms(build)
    return ms, result[-1].source, len(result[-1])


def warm_disk_ms(paths: list[str]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        for path in paths:
            ElfCache(disk_cache=DiskCache(folder)).load(path)

        def load_all() -> None:
            cache = ElfCache(disk_cache=DiskCache(folder))
            for path in paths:
                cache.load(path)
            assert cache.parses == 0

        return _best_ms(load_all)


def dwarf_cold_and_cached() -> str | None:
    """Inline chains of 30 random libc functions (the debug file's DWARF):
    cold, then from the disk cache; and the entry's write time as it grows."""
    libc = ElfCache().load(LIBC)
    if not isinstance(libc, ElfIndex) or not libc.source.startswith("debug:"):
        return None
    path = libc.source.removeprefix("debug:")
    starts, sizes, _names = libc.arrays()
    rng = random.Random(7)
    picks = rng.sample([s for s, z in zip(starts, sizes, strict=True) if z > 0], 30)
    everywhere = rng.sample(starts, 2000)
    with tempfile.TemporaryDirectory() as folder:
        built: list[DwarfIndex] = []

        def cold() -> None:
            dwarf = DwarfIndex(path, DwarfCache(folder) if not built else None)
            for vaddr in picks:
                dwarf.inlines(vaddr)
            dwarf.close()  # saves what the last write left out
            built.append(dwarf)

        def cached() -> None:
            dwarf = DwarfIndex(path, DwarfCache(folder))
            for vaddr in picks:
                dwarf.inlines(vaddr)
            assert dwarf.units_built == 0

        cold_ms, cached_ms = _best_ms(cold, 3), _best_ms(cached)
        units = built[0].units_built
        writes = []
        for count in (EAGER_UNITS, 256):
            cache = DwarfCache(folder)
            dwarf = DwarfIndex(path, cache)
            for vaddr in everywhere:
                if dwarf.units_built + dwarf.units_loaded >= count:
                    break
                dwarf.inlines(vaddr)
            entry = cache.entry(path)
            assert entry is not None

            def write(entry: DwarfEntry = entry) -> None:
                entry.dirty = True
                entry.flush()

            ms = _best_ms(write)
            size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(folder, "*.dwarf")))
            writes.append(f"{ms:.2f} ms at {len(entry)} units ({size / 1024:.0f} KiB)")

        def read() -> None:
            assert DwarfCache(folder).entry(path) is not None

        read_ms = _best_ms(read)
    return (
        f"DWARF libc, 30 functions ({units} units): cold {cold_ms:.0f} ms,"
        f" cached {cached_ms:.1f} ms; entry write {', '.join(writes)};"
        f" read {read_ms:.2f} ms (the largest)"
    )


def memory_for_libraries(count: int) -> tuple[int, int, float]:
    candidates = sorted(
        (p for p in glob.glob("/usr/lib/x86_64-linux-gnu/*.so*") if os.path.isfile(p)),
        key=os.path.getsize,
        reverse=True,
    )
    cache = ElfCache(max_files=count * 2)
    gc.collect()
    tracemalloc.start()
    loaded = functions = 0
    for path in candidates:
        index = cache.load(path)
        if isinstance(index, ElfIndex) and index.has_symbols:
            loaded += 1
            functions += len(index)
        if loaded == count:
            break
    gc.collect()
    current, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return loaded, functions, current / 1e6


def _load_kallsyms() -> None:
    KernelSymbols.load()


def main() -> int:
    if not (os.path.exists(LIBC) and os.path.exists(PYTHON)):
        print("needs Debian's libc and /usr/bin/python3.11", file=sys.stderr)
        return 1
    for inline in (False, True):
        first_us, rate = lookups(inline)
        label = "with inline frames (DWARF)" if inline else "symbols only"
        print(f"{label}: first sight {first_us:.1f} µs/address (random addresses)")
        print(f"    cached lookups {rate:,.0f} addresses/s (target >= 500,000)")
    for name, path, target in (("libc", LIBC, 150), ("python3.11", PYTHON, 1000)):
        ms, source, n = first_build(path)
        print(
            f"first build {name:<11} {ms:7.1f} ms  ({n} functions, {source}; target <= {target} ms)"
        )
    print(
        f"warm disk cache libc+python3.11: {warm_disk_ms([LIBC, PYTHON]):.1f} ms (target <= 50 ms)"
    )
    print(dwarf_cold_and_cached() or "DWARF: libc has no separate debug file here")
    loaded, functions, mb = memory_for_libraries(50)
    print(f"memory, {loaded} libraries ({functions} functions): {mb:.1f} MB (target <= 100 MB)")
    print(f"kernel symbols (/proc/kallsyms): {_best_ms(_load_kallsyms):.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
