"""What the collector keeps beside the profile, tick to tick.

Owns :class:`ProcessWatch` (psutil facts about the target, and whether it
exited), :class:`ThreadNames` (tid -> name from /proc, once per thread),
:class:`CollectionCounters` (samples, lost and dropped events, failed stack
reads) and :class:`OverheadMeter` (bpftop's own CPU and its BPF run time).
Used only from the collector thread.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter

import psutil

from bpftop.bpf.errors import NoSuchProcessError
from bpftop.bpf.raw import RawTick
from bpftop.bpf.stats import ProgStats
from bpftop.tui.model.snapshot import CollectionStats, Overhead, ProcessInfo


class CollectionCounters:
    """Cumulative counters behind :class:`CollectionStats`."""

    def __init__(self, probe: str) -> None:
        self.probe = probe
        self.started = time.monotonic()
        self.total = 0
        self.rate = 0.0
        self.lost = 0
        self.dropped = 0
        self.errors: Counter[str] = Counter()

    def add(self, tick: RawTick) -> None:
        n = tick.total_samples
        self.total += n
        self.rate = n / tick.interval_s if tick.interval_s > 0 else 0.0
        self.lost += tick.lost_events
        self.dropped += tick.dropped_samples
        for s in tick.samples:
            if s.user_error:
                self.errors[f"user {s.user_error}"] += s.count
            if s.kernel_error:
                self.errors[f"kernel {s.kernel_error}"] += s.count

    def freeze(self) -> CollectionStats:
        return CollectionStats(
            probe=self.probe,
            elapsed_s=time.monotonic() - self.started,
            total_samples=self.total,
            samples_per_s=self.rate,
            lost_events=self.lost,
            dropped_samples=self.dropped,
            stack_errors=tuple(sorted(self.errors.items())),
        )


class OverheadMeter:
    """bpftop's own CPU % and its BPF programs' run time, per second, tick to tick."""

    def __init__(self) -> None:
        self._me = psutil.Process()
        self._me.cpu_percent()  # prime
        self._runs = ProgStats()
        self._at = time.monotonic()
        self._last = Overhead()

    def measure(self, runs: ProgStats | None) -> Overhead:
        now = time.monotonic()
        elapsed, self._at = now - self._at, now
        if runs is None or elapsed <= 0:
            return self._last
        delta, self._runs = runs - self._runs, runs
        self._last = Overhead(
            cpu_percent=self._me.cpu_percent(),
            bpf_run_ns_per_s=delta.run_time_ns / elapsed,
            bpf_runs_per_s=delta.run_count / elapsed,
        )
        return self._last


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
