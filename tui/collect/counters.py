"""What the collector counts beside the profile, tick to tick.

Owns :class:`CollectionCounters` (samples, lost and dropped events, failed
stack reads; one set per probe, see :mod:`bpftop.tui.collect.probe_profiles`)
and :class:`OverheadMeter` (bpftop's own CPU and its BPF programs' run time).
Used only from the collector thread.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping

import psutil

from bpftop.bpf.raw import RawTick
from bpftop.bpf.stats import ProgStats
from bpftop.tui.model.snapshot import CollectionStats, Overhead


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
        self.qualities: Counter[str] = Counter()  # samples by how their user stack was made
        self.left_out: Counter[str] = Counter()  # samples not counted, by reason

    def add(
        self,
        tick: RawTick,
        qualities: Mapping[str, int] | None = None,
        left_out: Mapping[str, int] | None = None,
    ) -> None:
        """One tick's counts; ``qualities``: its samples by user-stack quality;
        ``left_out``: samples it did not count (less complete than BPF's), by reason."""
        n = tick.total_samples
        self.qualities.update(qualities or {})
        self.left_out.update(left_out or {})
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
            stack_quality=tuple(sorted((q, n) for q, n in self.qualities.items() if n)),
            left_out=tuple(sorted((r, n) for r, n in self.left_out.items() if n)),
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
