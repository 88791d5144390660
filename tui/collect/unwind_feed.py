"""Feeds the in-kernel unwinder: one worker thread per profiled process.

Owns :class:`UnwindFeed`. Its thread reads the target's executable mappings
(:func:`~bpftop.symbols.code_ranges.code_ranges`) and builds or loads each
file's unwind table (:class:`UnwindCache`: seconds cold, milliseconds from
disk; ``bench/unwind_bench.py``). It starts before the BPF program is compiled, so the slow builds
overlap the compile; once :meth:`UnwindFeed.attach` hands it the loaded
:class:`~bpftop.bpf.unwinder.Unwinder`, it describes the process to the walker
at once (frames use frame pointers until a file's table is there) and again
after each table it adds. The maps are read every ``poll_s``, so a dlopen
is noticed; only when their text changed are the files looked at again and
the walker told (a process whose maps stay the same costs one read a poll).
Nothing here runs on the tick path.
"""

from __future__ import annotations

import threading

from bpftop.bpf.unwinder import CodeMapping, Unwinder
from bpftop.symbols.code_ranges import CodeRange, code_ranges, read_maps_text
from bpftop.symbols.unwind_cache import UnwindCache, unwind_cache_dir
from bpftop.symbols.unwind_table import UnwindTable

POLL_S = 1.0


class UnwindFeed:
    """Keeps the walker's view of one process's code up to date."""

    def __init__(self, pid: int, *, cache: UnwindCache | None = None, poll_s: float = POLL_S):
        self.pid = pid
        self._cache = cache or UnwindCache(unwind_cache_dir())
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._unwinder: Unwinder | None = None
        self._tables: dict[str, UnwindTable | None] = {}
        self._ranges: tuple[CodeRange, ...] = ()
        self._maps_text: str | None = None  # as last read
        self.tables_loaded = 0
        self.ready = threading.Event()  # every file seen so far is in the walker
        self._thread = threading.Thread(target=self._run, name="bpftop-unwind", daemon=True)

    def start(self) -> UnwindFeed:
        self._thread.start()
        return self

    def attach(self, unwinder: Unwinder) -> None:
        """The program is loaded: feed its walker what is built so far, and from
        now on (called on the collector's thread; cheap: no building here)."""
        self._unwinder = unwinder
        self._push(self._ranges)
        self._wake.set()

    def close(self, timeout_s: float | None = None) -> None:
        """Stop; wait for the thread (a table build in progress may take seconds:
        the unwinder ignores writes once its program is closed)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            text = read_maps_text(self.pid)
            if text is None:
                return  # the process is gone
            if text != self._maps_text and not self._update(text):
                return
            if self._unwinder is not None:
                self.ready.set()
            self._wake.wait(self._poll_s)
            self._wake.clear()

    def _update(self, maps_text: str) -> bool:
        """The maps changed: describe them and load missing tables (False: stop)."""
        ranges = code_ranges(self.pid, maps_text=maps_text)
        if not ranges:
            return False  # the process is gone
        self._ranges = ranges
        self._push(ranges)
        for code in ranges:
            if self._stop.is_set():
                return False
            if code.key not in self._tables:
                self._tables[code.key] = self._cache.load(code.open_path)
                self._push(ranges)
        self._maps_text = maps_text  # only once every table is in
        return True

    def _push(self, ranges: tuple[CodeRange, ...]) -> None:
        """Add the tables built so far and describe the process (once attached)."""
        unwinder = self._unwinder
        if unwinder is None or not ranges:
            return
        for key, table in list(self._tables.items()):
            if table is None:
                unwinder.note_without_cfi(key)
            elif not unwinder.has_table(key):
                self.tables_loaded += unwinder.add_table(key, table.packed) is not None
        mappings = [CodeMapping(c.start, c.end, c.bias, c.key) for c in ranges]
        unwinder.set_process(self.pid, mappings)


def prefetch_unwind_tables(sampler: object, pid: int) -> UnwindFeed | None:
    """A running feed when ``sampler`` will load the .eh_frame walker (not ``--unwind fp``)."""
    return UnwindFeed(pid).start() if getattr(sampler, "unwind", "fp") != "fp" else None


def attach_unwinder(feed: UnwindFeed | None, sampler: object) -> None:
    """Hand the loaded walker to ``feed`` (nothing when either is missing)."""
    unwinder = getattr(sampler, "unwinder", None)
    if feed is not None and isinstance(unwinder, Unwinder):
        feed.attach(unwinder)
