"""Facts about the profiled process, tick to tick.

Owns :class:`ProcessWatch` (psutil facts about the target, and whether it
exited: a process lives while any of its threads does; a command bpftop holds
before its exec is named as the user typed it, not as the holding shell; the
children it runs that are not followed), :func:`wake_at_exit` and
:func:`trim_heap` and :func:`map_large_blocks` (bpftop's own freed memory
back to the system). Used from the collector thread (``map_large_blocks``:
once, at launch, by the CLI).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import os
import select
import shlex
import threading
from collections.abc import Callable, Sequence

import psutil

from bpftop.base.errors import NoSuchProcessError
from bpftop.tui.model.snapshot import CHILDREN_HINT_CPU, ProcessInfo


class ProcessWatch:
    """psutil facts about the target, and whether it has exited.

    ``command``: the command a held launch will exec (the process is still the
    shell that holds it: its name and command line are the command's);
    ``count_children``: count its live child processes (not followed) while
    it uses under ``CHILDREN_HINT_CPU`` itself."""

    def __init__(self, pid: int, command: Sequence[str] = (), count_children: bool = False) -> None:
        self.pid = pid
        self.gone = False
        self._count_children = count_children
        try:
            self._proc = psutil.Process(pid)
            if not any_thread_alive(pid):  # a zombie leader with live threads is alive
                raise psutil.ZombieProcess(pid)
            if command:
                self.name = os.path.basename(command[0])[:15]  # as the kernel's comm will be
                self._cmdline = shlex.join(command)
            else:
                self.name = self._proc.name()
                self._cmdline = " ".join(_cmdline(self._proc)) or f"[{self.name}]"
        except psutil.Error:
            raise NoSuchProcessError(
                f"process {pid} has exited", "check the pid with ps or pgrep"
            ) from None
        self._last = ProcessInfo(pid, self.name, self._cmdline, 0.0, 0, 0, True)
        self._proc.cpu_percent()  # prime: the first call always returns 0.0

    def exited(self) -> bool:
        """True once the target is gone: none of its threads runs (zombies do
        not). A main thread that exits early leaves a zombie leader and a live
        process."""
        if not self.gone:
            self.gone = not self._alive()
        return self.gone

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
                cpu_percent = self._proc.cpu_percent()
                idle = self._count_children and cpu_percent < CHILDREN_HINT_CPU
                self._last = ProcessInfo(
                    pid=self.pid,
                    name=self.name,
                    cmdline=self._cmdline,
                    cpu_percent=cpu_percent,
                    rss_bytes=self._proc.memory_info().rss,
                    num_threads=self._proc.num_threads(),
                    alive=True,
                    stopped=self._proc.status() == psutil.STATUS_STOPPED,
                    children=live_children(self.pid) if idle else 0,  # a read per thread
                )
        except psutil.Error:
            self.gone = True
        return self._last


def wake_at_exit(pid: int, wake: Callable[[], None], stop: threading.Event) -> None:
    """Call ``wake`` (from a thread of its own) once every thread of process
    ``pid`` has exited (its pidfd turns readable then), so the tick that sees
    the exit comes at once, not up to an interval later (``record -- CMD``
    wrote its file up to a second after CMD ended); the thread ends then or
    within a second of ``stop``. Nothing if the process is gone already or
    the kernel has no pidfd."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return

    def watch() -> None:
        try:
            while not stop.is_set():
                if select.select([fd], [], [], 1.0)[0]:
                    wake()
                    return
        finally:
            os.close(fd)

    threading.Thread(target=watch, name=f"bpftop-exit-{pid}", daemon=True).start()


def _cmdline(proc: psutil.Process) -> list[str]:
    """The command line; none once the main thread has exited (its memory is gone)."""
    try:
        return proc.cmdline()
    except psutil.ZombieProcess:
        return []


def live_children(pid: int) -> int:
    """How many child processes ``pid`` has now (its threads' children files)."""
    found: set[str] = set()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                found.update(f.read().split())
        except OSError:
            continue
    return len(found)


def _stat_fields(path: str) -> list[str]:
    """The fields of a /proc stat file after the command name ([] if unreadable)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().rpartition(")")[2].split()
    except OSError:
        return []


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


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MMAP_THRESHOLD_BYTES = 256 * 1024
TRIM_THRESHOLD_BYTES = 8 << 20


def trim_heap() -> None:
    """Hand the heap that compiling left free back to the system (glibc's
    ``malloc_trim``: ~50 MB of LLVM's memory stays resident otherwise)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):  # not glibc
        ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)


def map_large_blocks() -> None:
    """From now on (the CLI calls it once, at launch), keep large blocks (count
    arrays, their per-tick copies, drained maps, kallsyms' parse) out of the
    heap, so freeing them gives their memory back: glibc otherwise raises its
    mmap threshold to the largest block freed, and the heap then keeps every
    size ever freed. Set at launch: the live view's peak RSS was 206 MiB with
    it set after the compile (the first tick's blocks stayed in the heap), 179
    with it set before (bench.live). The heap's free top is kept up to 8 MiB
    (glibc gave back all of it over 128 KiB): a tick's smaller arrays, freed,
    are reused by the next tick's instead of faulted in afresh (~5 ms a second
    of system time in the live view at scale)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):  # not glibc
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
