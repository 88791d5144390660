"""Feeds the in-kernel unwinder: every process bpftop samples gets its tables.

Owns :class:`UnwindFeed`: three worker threads for all processes. One reads each
process's executable mappings (:func:`~bpftop.symbols.elf.code_ranges.code_ranges`)
and describes it with the tables already built or on disk (milliseconds);
another builds the missing ones (seconds each, cold), most-sampled process
first, through a shared
:class:`~bpftop.symbols.unwind.process_tables.ProcessTables` (per file, once: a
library mapped by many processes, or two processes of one binary, cost one
build; the early sampler's user-space walk uses the same tables). It starts
before the BPF program is compiled, so the slow builds overlap the compile;
once :meth:`UnwindFeed.attach` hands it the loaded
:class:`~bpftop.bpf.unwinder.Unwinder`, it describes each process to the walker
at once (frames use frame pointers until a file's table is there) and again
after each table it adds.

Which processes: the targets given at the start (every ``-p``), the children
the collector learns from fork events (``--children``; the kernel gives a child
its parent's entry at the fork, bpf/unwind.bpf.c), and any other process that
gets samples (``-a``), most-sampled first, at most ``max_processes`` at a time
(the walker's process map and rows are bounded; the rest keep frame pointers
and are counted). An exec is described at once (the kernel drops the stale
entry and says so in a ring buffer a third thread waits on), and a fork wakes
the thread; otherwise the maps are re-read every ``poll_s``, so a dlopen is
noticed (maps that stay the same cost one read a poll). BPF samples of a process
without an entry are counted by reason (:class:`~bpftop.bpf.unwinder.FeedState`,
in Diagnostics). The tick path (:meth:`UnwindFeed.note_tick`) only counts and wakes.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from bpftop.bpf.raw import RawTick
from bpftop.bpf.unwinder import CodeMapping, FeedState, Unwinder
from bpftop.symbols.elf.code_ranges import CodeRange, read_maps_text
from bpftop.symbols.unwind.cache import UnwindCache
from bpftop.symbols.unwind.perf_trampolines import all_code_ranges
from bpftop.symbols.unwind.process_tables import ProcessTables
from bpftop.tui.collect.busy import busy_processes
from bpftop.tui.collect.niceness import Yielding
from bpftop.tui.collect.targets import is_process, is_stopped

if TYPE_CHECKING:
    from bpftop.tui.collect.early import EarlyFeed

POLL_S = 1.0
MAX_PROCESSES = 256  # processes fed at once (the walker's map holds 1,024)
HELD_WAIT_S = 5.0  # a command held at its exec waits this long for its tables at most
EXEC_CHECK_S = 0.05  # a few followed processes: how often their executable is checked
EXEC_WAIT_S = 0.1  # the exec thread's longest wait for the walker's exec events
MAX_EXEC_CHECKED = 32  # past this many (-a), an exec is noticed at the next poll
BUSY_WINDOW_S = 0.3  # -a: CPU time is compared over this long to find busy processes
MAX_IGNORED = 65536  # gone or code-less pids remembered (not looked at again)
WAITING = "tables not built yet"
OVER_LIMIT = "past the feed's process limit"
GONE = "process gone or without user code"
SELF = "bpftop itself (not fed)"


class UnwindFeed:
    """Keeps the walker's view of every sampled process's code up to date."""

    def __init__(
        self,
        pids: int | Iterable[int] = (),
        *,
        tables: ProcessTables | None = None,
        cache: UnwindCache | None = None,
        poll_s: float = POLL_S,
        max_processes: int = MAX_PROCESSES,
        busy_first: bool = False,
    ) -> None:
        """``pids``: the processes fed from the start; ``tables``: shared with
        another user (else a new one over ``cache``, default the disk cache);
        ``busy_first`` (-a): first feed the processes busy on a CPU now, busiest
        first (they are the ones about to be sampled). bpftop's own process is
        never fed (its samples keep frame pointers)."""
        self.tables = tables if tables is not None else ProcessTables(cache)
        self._poll_s = poll_s
        self._max = max_processes
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()  # guards the sets and dicts below
        self._visiting = threading.Lock()  # one visit at a time (the feed's or the exec thread's)
        self._unwinder: Unwinder | None = None
        self._wanted: dict[int, int] = {}  # pid -> samples seen while not fed (priority)
        self._maps: dict[int, str | None] = {}  # pid -> maps text its entry describes
        self._ranges: dict[int, tuple[CodeRange, ...]] = {}
        self._exe: dict[int, str] = {}  # pid -> its executable when its maps were read
        self._described: set[int] = set()  # pids the walker has an entry for
        self._current: set[int] = set()  # described with every table of its maps
        self._ignored: set[int] = {os.getpid()}
        self._busy_first = busy_first
        self._over: set[int] = set()
        self._fallbacks: Counter[str] = Counter()
        self.tables_loaded = 0
        self.ready = threading.Event()  # every wanted process is current in the walker
        self.prefetched = threading.Event()  # a first pass found every wanted file built
        for pid in (pids,) if isinstance(pids, int) else pids:
            self._wanted.setdefault(pid, 0)
        self._thread = threading.Thread(target=self._run, name="bpftop-unwind", daemon=True)
        self._to_build: tuple[CodeRange, ...] = ()  # files to build, most wanted first
        self._build_wake = threading.Event()
        self._builder = threading.Thread(target=self._build, name="bpftop-unwinds", daemon=True)
        self._yielding = Yielding()  # the builder's priority
        self.exec_seen: Callable[[int], object] = lambda _tgid: None
        """Called on the exec thread for each process that exec'd, first."""
        watch = self._watch_execs
        self._exec_watch = threading.Thread(target=watch, name="bpftop-execs", daemon=True)
        # Told (on the exec thread) of each described process that exec'd, once described anew.
        self.on_exec: Callable[[int], None] = lambda _: None

    @property
    def pids(self) -> tuple[int, ...]:
        """The processes fed now (or waiting for their tables)."""
        with self._lock:
            return tuple(self._wanted)

    def start(self) -> UnwindFeed:
        self._thread.start()
        return self

    def attach(self, unwinder: Unwinder) -> None:
        """The program is loaded: feed its walker what is built so far, and from
        now on (called on the collector's thread; cheap: no building here)."""
        self._unwinder = unwinder
        self._yielding.hurry()  # from now on a missing table costs BPF samples their stacks
        for pid, ranges in list(self._ranges.items()):
            self._push(pid, ranges)
        self._wake.set()
        if self._exec_watch.ident is None:
            self._exec_watch.start()

    def add(self, pid: int, samples: int = 0) -> bool:
        """Feed ``pid`` too (False: over the limit, or known to have no code)."""
        with self._lock:
            if pid in self._wanted:
                self._wanted[pid] += samples
                return True
            if pid in self._ignored or pid <= 0:
                return False
            if len(self._wanted) >= self._max:
                self._over.add(pid)
                return False
            self._over.discard(pid)
            self._wanted[pid] = samples
        self.ready.clear()
        self._wake.set()
        return True

    def note_exec(self, tgid: int) -> None:
        """``tgid`` exec'd: the kernel dropped its entry; describe the new image
        now. A process held stopped at its exec (``bpftop -- COMMAND``) is
        waited for, up to ``HELD_WAIT_S``: its first instruction is walked too."""
        self._forget_image(tgid)
        self.add(tgid)
        self.ready.clear()
        self._wake.set()
        if is_stopped(tgid):
            self.wait_current(tgid, HELD_WAIT_S)

    def _forget_image(self, tgid: int) -> None:
        with self._lock:
            self._maps.pop(tgid, None)
            self._described.discard(tgid)
            self._current.discard(tgid)
            self._ignored.discard(tgid)

    def note_tick(self, tick: RawTick, bpf: bool = True) -> None:
        """A tick's forks (followed children, fed at once), and its samples: a
        process sampled without an entry is fed (most samples first) and, for
        BPF samples (``bpf``), its samples are counted as frame-pointer fallbacks."""
        unwinder = self._unwinder
        for child, parent in zip(tick.forks, tick.fork_parents, strict=False):
            if is_process(child):
                if parent in self._described:  # the kernel copied the parent's entry
                    self._described.add(child)
                self.add(child)
            elif unwinder is not None:  # a new thread: its process has the entry
                unwinder.forget_process(child)
        unseen: Counter[int] = Counter()
        for sample in tick.samples:
            if sample.tgid not in self._described:
                unseen[sample.tgid] += sample.count
                if bpf and unwinder is not None and sample.user_stack:
                    self._fallbacks[self._reason(sample.tgid)] += sample.count
        for tgid, count in unseen.most_common():
            self.add(tgid, count)
        if unwinder is not None:
            with self._lock:
                waiting = len(self._wanted.keys() - self._current)
                state = FeedState(waiting, len(self._over), tuple(sorted(self._fallbacks.items())))
            unwinder.feed_state = state

    def _reason(self, tgid: int) -> str:
        if tgid in self._wanted:
            return WAITING
        if tgid == os.getpid():
            return SELF
        return OVER_LIMIT if len(self._wanted) >= self._max else GONE

    def wait_prefetched(self, timeout_s: float) -> bool:
        """Wait until the tables of the processes wanted at the start (-a: the
        busy ones) are built or loaded (True), or timeout; the builder runs at
        full priority from now on."""
        self._yielding.hurry()
        return self.prefetched.wait(timeout_s)

    def wait_current(self, pid: int, timeout_s: float) -> bool:
        """Wait until ``pid``'s entry has every table of its maps (True), or timeout."""
        self._yielding.hurry()
        deadline = time.monotonic() + timeout_s
        while pid not in self._current and time.monotonic() < deadline:
            if not self._thread.is_alive():
                return False
            time.sleep(0.01)
        return pid in self._current

    def close(self, timeout_s: float | None = None) -> None:
        """Stop; wait for the thread (a table build in progress may take seconds:
        the unwinder ignores writes once its program is closed)."""
        self._stop.set()
        self._wake.set()
        self._build_wake.set()
        for thread in (self._thread, self._builder, self._exec_watch):
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout_s)

    # -- the thread -----------------------------------------------------------
    def _run(self) -> None:
        self._builder.start()
        if self._busy_first:
            for pid, _ in busy_processes(BUSY_WINDOW_S, self._stop):
                self.add(pid)
        while not self._stop.is_set():
            self._wake.clear()
            with self._lock:  # most samples first; the targets in their order
                queue = sorted(self._wanted, key=lambda p: -self._wanted[p])
            # Describe every process with the tables there are (cheap: built, or
            # on disk); the builder thread builds the missing files in this
            # order and wakes us after each, so a long build holds no one up.
            missing = [pid for pid in queue if self._visit_one(pid)]
            files: dict[str, CodeRange] = {}
            for pid in missing:
                for code in self._ranges.get(pid, ()):
                    if not self.tables.has(code.key):
                        files.setdefault(code.key, code)
            self._to_build = tuple(files.values())
            if files:
                self._build_wake.set()
            else:
                self.prefetched.set()
                if self._unwinder is not None and not self._wake.is_set():
                    self.ready.set()
            self._sleep()

    def _build(self) -> None:
        """The builder thread, lowered (niceness, <= 2 s) until BPF or a held command needs it."""
        with self._yielding:
            while not self._stop.is_set():
                self._build_wake.wait()
                self._build_wake.clear()
                while not self._stop.is_set():
                    todo = (c for c in self._to_build if not self.tables.has(c.key))
                    code = next(todo, None)
                    if code is None:
                        break
                    self.tables.load(code)
                    self._wake.set()  # describe the processes with it

    def _watch_execs(self) -> None:
        """The exec thread: each image that exec'd is read for its names at once
        (``exec_seen``), then a described process that exec'd (bpf/unwind.bpf.c,
        unwind_exec) is described anew here, at once (handing the visit to the
        feed thread cost up to ~17 ms more on a loaded 2-core VM)."""
        while not self._stop.is_set() and self._unwinder is not None:
            execs = self._unwinder.wait_execs(EXEC_WAIT_S)
            if execs is None:
                return
            for tgid in execs:  # first: a short-lived image is read before it goes
                self.exec_seen(tgid)
            with self._lock:  # (-a wakes this for every exec: only the fed are described)
                fed = [tgid for tgid in execs if tgid in self._described or tgid in self._wanted]
            for tgid in fed:
                self._forget_image(tgid)
                if self.add(tgid):
                    self._visit_one(tgid)
                self.on_exec(tgid)
            if execs:
                self.ready.clear()
                self._wake.set()

    def refresh(self, tgid: int) -> None:
        """Describe ``tgid`` again now if it is fed and its maps changed: an
        image described at its exec has only the program and the dynamic
        loader; its libraries, mapped since, are walked once this runs."""
        with self._lock:
            fed = tgid in self._described or tgid in self._wanted
        if fed and self._unwinder is not None and not self._stop.is_set():
            self._visit_one(tgid)

    def _visit_one(self, pid: int) -> bool:
        with self._visiting:  # (the feed thread builds what is missing)
            return self._visit(pid)

    def _sleep(self) -> None:
        """Wait ``poll_s`` or until woken; notice within ``EXEC_CHECK_S`` the exec of a
        few processes not described yet (a described one's: the exec thread, or the next
        poll; checking them every 50 ms too cost ~0.15% of a core recording the demo)."""
        deadline = time.monotonic() + self._poll_s
        while True:
            check = [(p, e) for p, e in list(self._exe.items()) if p not in self._described]
            fast = check and len(self._exe) <= MAX_EXEC_CHECKED
            left = max(0.0, deadline - time.monotonic())
            if self._wake.wait(min(EXEC_CHECK_S, left) if fast else left) or left == 0.0:
                return
            for pid, exe in check if fast else ():
                if _exe(pid) != exe:
                    self._forget_image(pid)  # (gone: the next visit drops it)
                    return

    def _visit(self, pid: int) -> bool:
        """Re-read ``pid``'s maps; unless they are the ones described with every
        table, describe them with the tables built or on disk. True: some
        files' tables are still to be built."""
        text = read_maps_text(pid)
        if text is not None and text == self._maps.get(pid):
            return False
        ranges = all_code_ranges(pid, maps_text=text) if text is not None else ()
        if not ranges:  # gone, or a kernel thread
            self._drop(pid)
            return False
        with self._lock:
            self._current.discard(pid)
        self._ranges[pid] = ranges
        self._exe[pid] = _exe(pid)
        missing = False
        for code in ranges:
            if not self.tables.has(code.key) and not self.tables.load_stored(code):
                missing = True
        self._push(pid, ranges)
        if missing:
            return True
        with self._lock:
            if pid in self._wanted:
                self._maps[pid] = text  # only once every table is in
                self._current.add(pid)
                self._wanted[pid] = 0
        return False

    def _drop(self, pid: int) -> None:
        with self._lock:
            self._wanted.pop(pid, None)
            self._maps.pop(pid, None)
            self._ranges.pop(pid, None)
            self._exe.pop(pid, None)
            self._described.discard(pid)
            self._current.discard(pid)
            if len(self._ignored) >= MAX_IGNORED:
                self._ignored.clear()
            self._ignored.add(pid)
        self.tables.forget(pid)
        if self._unwinder is not None:
            self._unwinder.forget_process(pid)

    def _push(self, pid: int, ranges: tuple[CodeRange, ...]) -> None:
        """Add the tables built so far and describe the process (once attached)."""
        unwinder = self._unwinder
        if unwinder is None or not ranges:
            return
        for code in ranges:
            if not self.tables.has(code.key):
                continue
            table = self.tables.table(code.key)
            if table is None:
                unwinder.note_without_cfi(code.key)
            elif not unwinder.has_table(code.key):
                self.tables_loaded += unwinder.add_table(code.key, table.packed) is not None
        mappings = [CodeMapping(c.start, c.end, c.bias, c.key) for c in ranges]
        unwinder.set_process(pid, mappings)
        with self._lock:
            if pid in self._wanted:
                self._described.add(pid)


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def prefetch_unwind_tables(
    sampler: object, pids: Iterable[int], early: EarlyFeed | None = None
) -> UnwindFeed | None:
    """A running feed of ``pids`` (none: -a, fed from samples) when ``sampler``
    will load the .eh_frame walker (not ``--unwind fp``); it shares the early
    sampler's tables when there is one."""
    if getattr(sampler, "unwind", "fp") == "fp":
        return None
    tables = early.stacks.tables if early is not None else None
    pids = tuple(pids)
    feed = UnwindFeed(pids, tables=tables, busy_first=not pids)
    if early is None:  # nothing samples before BPF: these tables are on its critical path
        feed._yielding.hurry()
    return feed.start()


def attach_unwinder(feed: UnwindFeed | None, sampler: object) -> None:
    """Hand the loaded walker to ``feed`` (nothing when either is missing)."""
    unwinder = getattr(sampler, "unwinder", None)
    if feed is not None and isinstance(unwinder, Unwinder):
        feed.attach(unwinder)


def note_tick(feed: UnwindFeed | None, tick: RawTick, bpf: bool) -> None:
    """:meth:`UnwindFeed.note_tick` when there is a feed."""
    if feed is not None:
        feed.note_tick(tick, bpf)


def note_exec(feed: UnwindFeed | None, tgid: int) -> None:
    """:meth:`UnwindFeed.note_exec` when there is a feed."""
    if feed is not None:
        feed.note_exec(tgid)
