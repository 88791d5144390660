"""Facts about the profiled process, tick to tick.

Owns :class:`ProcessWatch` (psutil facts about the target, and whether it
exited), :class:`ThreadNames` (tid -> name from /proc, once per thread) and
:func:`trim_heap` (bpftop's own freed memory back to the system).
Used only from the collector thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses

import psutil

from bpftop.bpf.errors import NoSuchProcessError
from bpftop.bpf.raw import RawTick
from bpftop.tui.model.snapshot import ProcessInfo


class ProcessWatch:
    """psutil facts about the target, and whether it has exited."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.gone = False
        try:
            self._proc = psutil.Process(pid)
            if self._proc.status() == psutil.STATUS_ZOMBIE:
                raise psutil.ZombieProcess(pid)
            self.name = self._proc.name()
            self._cmdline = " ".join(self._proc.cmdline()) or f"[{self.name}]"
        except psutil.Error:
            raise NoSuchProcessError(
                f"process {pid} has exited", "check the pid with ps or pgrep"
            ) from None
        self._last = ProcessInfo(pid, self.name, self._cmdline, 0.0, 0, 0, True)
        self._proc.cpu_percent()  # prime: the first call always returns 0.0

    def exited(self) -> bool:
        """True once the process is gone (a zombie counts as gone).

        An exit event of the main thread alone does not decide it (a main
        thread may exit early and leave a live process), so psutil does.
        """
        if not self.gone:
            self.gone = not self._alive()
        return self.gone

    def _alive(self) -> bool:
        try:
            return self._proc.is_running() and self._proc.status() != psutil.STATUS_ZOMBIE
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
