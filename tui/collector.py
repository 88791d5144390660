"""The collector thread: drain the kernel, symbolize, aggregate, post snapshots.

One thread does all the slow work; the app (or ``record``) only ever sees the
immutable :class:`Snapshot` values it posts. The first snapshot goes out
before BCC compiles, so the window can say "compiling" at once.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

import psutil

from bpftop.bpf.errors import BpftopError, NoSuchProcessError
from bpftop.bpf.raw import MapUsage, RawSample, RawTick
from bpftop.bpf.stats import ProgStats
from bpftop.symbols.frame import Frame, Unresolved
from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Overhead, Phase, ProcessInfo, Snapshot

# Distinct address stacks remembered with their frames (every IP in a hot loop
# makes a new one, so this is bounded; the symbolizer caches per address).
MAX_CACHED_STACKS = 50_000
MISSING_USER_STACK = Frame("[missing user stack]", "", 0, reason=Unresolved.STACK_UNREADABLE)


class Sampler(Protocol):
    """What the collector needs from bpf/ (CpuSampler implements it)."""

    header_note: str

    @property
    def probe(self) -> str: ...

    @property
    def loaded(self) -> bool: ...

    def load(self) -> None: ...
    def set_targets(self, pids: Sequence[int]) -> None: ...
    def start(self) -> None: ...
    def drain(self) -> RawTick: ...
    def map_usage(self) -> tuple[MapUsage, ...]: ...
    def prog_stats(self) -> ProgStats: ...
    def close(self) -> None: ...


class Collector:
    """A :class:`~bpftop.tui.source.SnapshotSource` over a real sampler."""

    def __init__(self, pid: int, sampler: Sampler, interval_s: float) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self._sampler = sampler
        self._symbolizer = Symbolizer()
        self._profile = Profile()
        self._stacks: dict[tuple[int, tuple[int, ...], tuple[int, ...]], tuple[Frame, ...]] = {}
        self._process = _ProcessWatch(pid)
        self._stats = _Stats(sampler.probe)
        self._overhead = _OverheadMeter()
        self._seq = 0
        self._stop = threading.Event()
        self.finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._on_snapshot: Callable[[Snapshot], None] = lambda _: None
        self._on_error: Callable[[BpftopError], None] = lambda _: None
        self.last: Snapshot | None = None

    # -- SnapshotSource -------------------------------------------------------
    def start(
        self,
        on_snapshot: Callable[[Snapshot], None],
        on_error: Callable[[BpftopError], None],
    ) -> None:
        self._on_snapshot, self._on_error = on_snapshot, on_error
        self._thread = threading.Thread(target=self._run, name="bpftop-collector", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling (with a last drain), detach probes, join. Idempotent."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._sampler.close()

    # -- the thread -----------------------------------------------------------
    def _run(self) -> None:
        try:
            self._post(Phase.COMPILING)
            self._symbolizer.prepare(self.pid, preload=True)
            self._sampler.load()
            self._sampler.set_targets([self.pid])
            self._sampler.start()
            self._post(Phase.SAMPLING, self._sampler.header_note)
            self._loop()
        except BpftopError as err:
            self._on_error(err)
        except Exception as exc:  # a bug of ours: still one line, and the data stays
            self._on_error(
                BpftopError(f"internal error in the collector: {exc!r}", "please report it")
            )
        finally:
            self._sampler.close()
            self.finished.set()

    def _loop(self) -> None:
        deadline = time.monotonic() + self.interval_s
        while not self._stop.wait(max(0.0, deadline - time.monotonic())):
            deadline += self.interval_s
            tick = self._sampler.drain()
            self._absorb(tick)
            if self._process.exited():
                self._post(Phase.EXITED, f"process {self.pid} exited")
                return
            self._post(Phase.SAMPLING)
        self._absorb(self._sampler.drain())  # what came in since the last tick
        self._post(Phase.EXITED if self._process.gone else Phase.SAMPLING)

    def _absorb(self, tick: RawTick) -> None:
        for sample in tick.samples:
            self._profile.add(self._process.name, self._frames(sample), sample.count)
        self._stats.add(tick)

    def _frames(self, sample: RawSample) -> tuple[Frame, ...]:
        """Root-first frames: user frames outermost first, then kernel frames."""
        key = (sample.tgid, sample.user_stack, sample.kernel_stack)
        frames = self._stacks.get(key)
        if frames is None:
            user = self._symbolizer.user_frames(sample.tgid, sample.user_stack)
            kernel = self._symbolizer.kernel_frames(sample.kernel_stack)
            head = (MISSING_USER_STACK,) if sample.user_error else ()
            frames = head + tuple(reversed(user)) + tuple(reversed(kernel))
            if len(self._stacks) >= MAX_CACHED_STACKS:
                self._stacks.clear()  # cheap to rebuild from the per-address caches
            self._stacks[key] = frames
        return frames

    def _post(self, phase: Phase, message: str = "") -> None:
        self._seq += 1
        live = self._sampler.loaded
        snap = Snapshot(
            seq=self._seq,
            phase=phase,
            stats=self._stats.freeze(),
            process=self._process.info(),
            tree=self._profile.tree(),
            hot=self._profile.hot_functions(limit=500),
            message=message,
            maps=self._sampler.map_usage() if live else (),
            overhead=self._overhead.measure(self._sampler.prog_stats() if live else None),
        )
        self.last = snap
        self._on_snapshot(snap)


class _Stats:
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


class _OverheadMeter:
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


class _ProcessWatch:
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
