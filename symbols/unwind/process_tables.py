"""Unwind tables of live processes, looked up by absolute pc.

Owns :class:`ProcessTables`: the :data:`~bpftop.symbols.unwind.stack_walk.TableLookup`
that :func:`~bpftop.symbols.unwind.stack_walk.walk_copied_stack` needs for a process.
Tables are kept per file (by file identity, :attr:`CodeRange.key`), so a
library mapped by many processes is built once; mappings are kept per pid
(:func:`~bpftop.symbols.elf.code_ranges.code_ranges`: executable file mappings
with their load bias, the same list the in-kernel walker gets) and re-read
when a pc falls outside all of them (a dlopen), at most once per
``min_reread_s``.

Two threads, two jobs: :meth:`ProcessTables.lookup_for` gives the sampler's
thread a lookup that never builds (None for a file whose table is not there
yet, so the walk falls back to the frame pointer there, as the kernel's walker
does), and :meth:`ProcessTables.build_missing` builds or loads the missing
tables (:class:`UnwindCache`: seconds cold, milliseconds from disk) on a
worker thread; :meth:`ProcessTables.load` is the same per file, for a caller
that reads the maps itself (the in-kernel walker's feed). Builds take a lock,
so two threads sharing one ProcessTables (the feed and the early sampler's
walk) never build the same file twice: the second finds the first's table.
They share plain dicts whose single-item reads and writes are atomic under
the GIL. A lookup may re-read the maps on its caller's
thread (a few ms, rate-limited), and the first :meth:`lookup_for` of a pid
reads them there too. A range made at run time (``-X perf`` trampolines)
brings its own table. Processes are keyed by pid (the tgid: threads share
the maps): call :meth:`ProcessTables.forget` when one exits, so a recycled
pid starts afresh. Nothing here raises for a process that is gone.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable

from bpftop.symbols.elf.code_ranges import PROC_ROOT, CodeRange
from bpftop.symbols.unwind.cache import UnwindCache, unwind_cache_dir
from bpftop.symbols.unwind.perf_trampolines import all_code_ranges
from bpftop.symbols.unwind.stack_walk import TableLookup
from bpftop.symbols.unwind.table import UnwindTable

MIN_REREAD_S = 0.5
_Found = tuple[UnwindTable, int]


class _ProcessCode:
    """One process's executable mappings and, per mapping, its (table, bias) once known."""

    __slots__ = ("_clock", "_last_read", "_min_reread_s", "_proc_root", "_tables", "pid", "state")

    def __init__(
        self,
        pid: int,
        tables: dict[str, UnwindTable | None],
        proc_root: str,
        clock: Callable[[], float],
        min_reread_s: float,
    ) -> None:
        self.pid = pid
        self._tables = tables
        self._proc_root = proc_root
        self._clock = clock
        self._min_reread_s = min_reread_s
        self._last_read = clock()
        self.state = _state(all_code_ranges(pid, proc_root))

    def lookup(self, pc: int) -> _Found | None:
        """(table, bias) of the file mapped at ``pc``; None if unmapped or not built yet."""
        ranges, starts, found = self.state
        at = bisect.bisect_right(starts, pc) - 1
        if at < 0 or pc >= ranges[at].end:
            if not self._reread():
                return None
            ranges, starts, found = self.state
            at = bisect.bisect_right(starts, pc) - 1
            if at < 0 or pc >= ranges[at].end:
                return None
        got = found[at]
        if got is None:
            table = self._tables.get(ranges[at].key)
            if table is None:
                return None
            got = found[at] = (table, ranges[at].bias)
        return got

    def _reread(self) -> bool:
        """Read the maps again unless that was done less than ``min_reread_s`` ago."""
        now = self._clock()
        if now - self._last_read < self._min_reread_s:
            return False
        self._last_read = now
        self.state = _state(all_code_ranges(self.pid, self._proc_root))
        return True


def _state(
    ranges: tuple[CodeRange, ...],
) -> tuple[tuple[CodeRange, ...], list[int], list[_Found | None]]:
    ordered = tuple(sorted(ranges, key=lambda c: c.start))
    return ordered, [c.start for c in ordered], [None] * len(ordered)


def _made(code: CodeRange) -> UnwindTable | None:
    """The table of a range made at run time (its rows came with it)."""
    return UnwindTable(code.rows, code.rows_source) if code.rows else None


class ProcessTables:
    """Unwind tables shared across processes, and each process's mappings."""

    def __init__(
        self,
        cache: UnwindCache | None = None,
        *,
        proc_root: str = PROC_ROOT,
        clock: Callable[[], float] = time.monotonic,
        min_reread_s: float = MIN_REREAD_S,
    ) -> None:
        """``cache``: where tables are loaded from and stored (default: the
        on-disk unwind cache); used only by :meth:`build_missing`."""
        self._cache = cache if cache is not None else UnwindCache(unwind_cache_dir())
        self._proc_root = proc_root
        self._clock = clock
        self._min_reread_s = min_reread_s
        self._tables: dict[str, UnwindTable | None] = {}  # None: tried, no usable CFI
        self._procs: dict[int, _ProcessCode] = {}
        self._build_lock = threading.Lock()
        self.loads = 0  # files built or loaded from disk (each once)

    def lookup_for(self, pid: int) -> TableLookup:
        """The lookup of ``pid`` (reads its maps the first time; never builds tables)."""
        return self._process(pid).lookup

    def missing(self, pid: int) -> tuple[CodeRange, ...]:
        """The mappings of ``pid`` whose file has not been built or loaded yet."""
        ranges = self._process(pid).state[0]
        return tuple(code for code in ranges if code.key not in self._tables)

    def build_missing(self, pid: int, stop: Callable[[], bool] = lambda: False) -> int:
        """Build or load the table of each file of ``pid`` not tried yet; slow
        (seconds per big file when cold): call it off the sampler's thread.
        ``stop`` is asked between files. Returns how many files were tried."""
        tried = 0
        for code in self.missing(pid):
            if stop():
                break
            tried += self._load(code)
        return tried

    def load(self, code: CodeRange) -> UnwindTable | None:
        """The table of ``code``'s file: built or loaded once, then shared (slow
        when cold: call it off the sampler's thread)."""
        self._load(code)
        return self._tables.get(code.key)

    def load_stored(self, code: CodeRange) -> bool:
        """Take ``code``'s table from the disk cache if it is there (milliseconds;
        never builds, never waits for a build). True: the file has been tried."""
        if code.key not in self._tables:
            table = _made(code) or self._cache.stored(code.open_path)
            if table is not None:
                self._tables.setdefault(code.key, table)
        return code.key in self._tables

    def has(self, key: str) -> bool:
        """Was the file named ``key`` tried (built, loaded, or found without CFI)?"""
        return key in self._tables

    def _load(self, code: CodeRange) -> bool:
        if code.key in self._tables:  # another mapping of the same file
            return False
        with self._build_lock:
            if code.key in self._tables:  # another thread built it meanwhile
                return False
            self._tables[code.key] = _made(code) or self._cache.load(code.open_path)
            self.loads += 1
        return True

    def add_table(self, key: str, table: UnwindTable | None) -> None:
        """Use ``table`` for the file named ``key`` (e.g. one a feed built already)."""
        self._tables[key] = table

    def table(self, key: str) -> UnwindTable | None:
        return self._tables.get(key)

    def forget(self, pid: int) -> None:
        """Drop a process's mappings (it exited); its files' tables stay."""
        self._procs.pop(pid, None)

    def _process(self, pid: int) -> _ProcessCode:
        proc = self._procs.get(pid)
        if proc is None:
            proc = _ProcessCode(pid, self._tables, self._proc_root, self._clock, self._min_reread_s)
            self._procs[pid] = proc
        return proc
