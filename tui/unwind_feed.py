"""Feeds the in-kernel unwinder: one worker thread per profiled process.

Owns :class:`UnwindFeed`. It reads the target's executable mappings
(:func:`~bpftop.symbols.code_ranges.code_ranges`), tells the walker about them
at once (frames use frame pointers until a file's table is there), then
builds or loads each file's unwind table (:class:`UnwindCache`: seconds cold,
milliseconds from disk) and hands its rows to
:class:`~bpftop.bpf.unwinder.Unwinder`, re-describing the process after each
one. The maps are re-read every ``poll_s`` so a dlopen is noticed. Nothing
here runs on the tick path; ``close()`` stops and joins the thread.
"""

from __future__ import annotations

import threading

from bpftop.bpf.unwinder import CodeMapping, Unwinder
from bpftop.symbols.code_ranges import CodeRange, code_ranges
from bpftop.symbols.unwind_cache import UnwindCache, unwind_cache_dir

POLL_S = 1.0


class UnwindFeed:
    """Keeps the walker's view of one process's code up to date."""

    def __init__(
        self,
        unwinder: Unwinder,
        pid: int,
        *,
        cache: UnwindCache | None = None,
        poll_s: float = POLL_S,
    ) -> None:
        self.pid = pid
        self._unwinder = unwinder
        self._cache = cache or UnwindCache(unwind_cache_dir())
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._tried: set[str] = set()
        self.tables_loaded = 0
        self.ready = threading.Event()  # set once every file seen so far was tried
        self._thread = threading.Thread(target=self._run, name="bpftop-unwind", daemon=True)

    def start(self) -> UnwindFeed:
        self._thread.start()
        return self

    def close(self, timeout_s: float | None = None) -> None:
        """Stop; wait for the thread (a table build in progress may take seconds:
        the unwinder ignores writes once its program is closed)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        seen: tuple[CodeRange, ...] = ()
        while not self._stop.is_set():
            ranges = code_ranges(self.pid)
            if not ranges:
                return  # the process is gone
            if ranges != seen:
                seen = ranges
                self._feed(ranges)
            self.ready.set()
            self._stop.wait(self._poll_s)

    def _feed(self, ranges: tuple[CodeRange, ...]) -> None:
        self._describe(ranges)
        for code in ranges:
            if self._stop.is_set():
                return
            if code.key in self._tried:
                continue
            self._tried.add(code.key)
            table = self._cache.load(code.open_path)
            if table is not None and self._unwinder.add_table(code.key, table.packed):
                self.tables_loaded += 1
                self._describe(ranges)

    def _describe(self, ranges: tuple[CodeRange, ...]) -> None:
        mappings = [CodeMapping(c.start, c.end, c.bias, c.key) for c in ranges]
        self._unwinder.set_process(self.pid, mappings)


def start_unwind_feed(sampler: object, pid: int) -> UnwindFeed | None:
    """A running feed when ``sampler`` has a loaded .eh_frame walker (not ``--unwind fp``)."""
    unwinder = getattr(sampler, "unwinder", None)
    return UnwindFeed(unwinder, pid).start() if isinstance(unwinder, Unwinder) else None
