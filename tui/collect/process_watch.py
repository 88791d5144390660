"""Facts about the profiled process, tick to tick.

Owns :class:`ProcessWatch` (psutil facts about the target, and whether it
and every other process that keeps the run going exited: a process lives
while any of its threads does), :class:`ThreadNames` (tid -> name from /proc, once per thread) and
:func:`trim_heap` (bpftop's own freed memory back to the system).
Used only from the collector thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import os
from collections.abc import Iterable

import psutil

from bpftop.bpf.errors import NoSuchProcessError
from bpftop.bpf.raw import RawTick
from bpftop.tui.model.snapshot import ProcessInfo


class ProcessWatch:
    """psutil facts about the target, and whether it has exited."""

    def __init__(self, pid: int, others: Iterable[int] = ()) -> None:
        """``others``: more processes (-p -p) that keep the run going while they live."""
        self.pid = pid
        self.gone = False  # the main target is gone
        self._others: dict[int, int] = {}  # pid -> start time (a reused pid is another process)
        for other in others:
            self.follow(other)
        try:
            self._proc = psutil.Process(pid)
            if not any_thread_alive(pid):  # a zombie leader with live threads is alive
                raise psutil.ZombieProcess(pid)
            self.name = self._proc.name()
            self._cmdline = " ".join(_cmdline(self._proc)) or f"[{self.name}]"
        except psutil.Error:
            raise NoSuchProcessError(
                f"process {pid} has exited", "check the pid with ps or pgrep"
            ) from None
        self._last = ProcessInfo(pid, self.name, self._cmdline, 0.0, 0, 0, True)
        self._proc.cpu_percent()  # prime: the first call always returns 0.0

    def follow(self, pid: int) -> None:
        """Process ``pid`` (a child --children follows) keeps the run going while it lives."""
        started = start_time(pid)
        if started is not None:
            self._others[pid] = started

    def reopened(self) -> ProcessWatch:
        """A fresh watch of the same process (it exec'd: new name and command line),
        following the same processes; raises NoSuchProcessError."""
        watch = ProcessWatch(self.pid)
        watch._others = self._others
        return watch

    def exited(self) -> bool:
        """True once the target and every followed process are gone.

        A process is gone when none of its threads runs (zombies do not): a
        main thread that exits early leaves a zombie leader and a live
        process, and a parent may exit before the children it forked.
        """
        if not self.gone:
            self.gone = not self._alive()
        for pid, started in list(self._others.items()):
            if start_time(pid) != started or not any_thread_alive(pid):
                del self._others[pid]
        return self.gone and not self._others

    def _alive(self) -> bool:
        try:
            return self._proc.is_running() and any_thread_alive(self.pid)
        except psutil.Error:
            return False

    def info(self) -> ProcessInfo:
        if self.gone:
            return dataclasses.replace(self._last, alive=False)
        try:
            with self._proc.oneshot():
                self._last = ProcessInfo(
                    pid=self.pid,
                    name=self.name,
                    cmdline=self._cmdline,
                    cpu_percent=self._proc.cpu_percent(),
                    rss_bytes=self._proc.memory_info().rss,
                    num_threads=self._proc.num_threads(),
                    alive=True,
                )
        except psutil.Error:
            self.gone = True
        return self._last


def _cmdline(proc: psutil.Process) -> list[str]:
    """The command line; none once the main thread has exited (its memory is gone)."""
    try:
        return proc.cmdline()
    except psutil.ZombieProcess:
        return []


def _stat_fields(path: str) -> list[str]:
    """The fields of a /proc stat file after the command name ([] if unreadable)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().rpartition(")")[2].split()
    except OSError:
        return []


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot), None if it is gone."""
    fields = _stat_fields(f"/proc/{pid}/stat")
    return int(fields[19]) if len(fields) > 19 else None


def any_thread_alive(pid: int) -> bool:
    """Does any thread of process ``pid`` still run (is not a zombie or dead)?"""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        fields = _stat_fields(f"/proc/{pid}/task/{tid}/stat")
        if fields and fields[0] not in ("Z", "X", "x"):
            return True
    return False


class ThreadNames:
    """tid -> thread name, read from /proc once per new thread (exits name the rest)."""

    def __init__(self, pid: int) -> None:
        self._task = f"/proc/{pid}/task"
        self.names: dict[int, str] = {}

    def note(self, tick: RawTick) -> None:
        for ev in tick.exits:
            if not self.names.get(ev.tid):
                self.names[ev.tid] = ev.comm
        for sample in tick.samples:
            if sample.tid not in self.names:
                self.names[sample.tid] = self._read(sample.tid)

    def _read(self, tid: int) -> str:
        try:
            with open(f"{self._task}/{tid}/comm", encoding="utf-8", errors="replace") as f:
                return f.read().strip()
        except OSError:
            return ""


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD_BYTES = 256 * 1024


def trim_heap() -> None:
    """Hand the heap that compiling left free back to the system (glibc's
    ``malloc_trim``: ~50 MB of LLVM's memory stays resident otherwise), and
    keep large blocks (count arrays, their per-tick copies, drained maps) out
    of the heap from now on, so freeing them gives their memory back. (glibc
    otherwise raises its mmap threshold to the largest block freed, and the
    heap then keeps every array size the tree ever grew through.)"""
    with contextlib.suppress(OSError, AttributeError, TypeError):  # not glibc
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.malloc_trim(0)
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
