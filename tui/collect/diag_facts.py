"""Diagnostics' facts from the sampler, read every few seconds rather than every tick.

Owns :class:`DiagnosticsFacts`: the BPF maps' usage, the .eh_frame walker's
state, the Python walker's counts and the overhead (bpftop's CPU, its BPF
programs' run time). Reading them walks maps and asks the kernel for each
loaded BPF program's run numbers: ~2 ms a tick at scale (bench.live
--workload scale, timed on the collector thread, when those were read from
/proc fdinfo), for figures that change slowly; Diagnostics says how old. So they are
read on the first tick BPF is live, then once ``refresh_s`` has passed, and
for every last snapshot (record's, or the one at exit); the snapshots between
repeat the last reading, the overhead being an average over the time since
the reading before. Used only from the collector thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from bpftop.bpf.stats import ProgStats
from bpftop.tui.collect.counters import OverheadMeter
from bpftop.tui.model.snapshot import MapUsage, Overhead, PythonCounts, UnwindState

REFRESH_S = 5.0


class FactReader(Protocol):
    """The sampler's readers of these facts (see :class:`~bpftop.tui.collect.sampler.Sampler`)."""

    def map_usage(self) -> tuple[MapUsage, ...]: ...
    def unwind_state(self) -> UnwindState | None: ...
    def python_counts(self) -> PythonCounts | None: ...
    def prog_stats(self) -> ProgStats: ...


@dataclass(frozen=True, slots=True)
class Facts:
    """One reading, as the snapshot carries it (nothing read: empty, the last overhead)."""

    maps: tuple[MapUsage, ...] = ()
    overhead: Overhead = field(default_factory=Overhead)
    unwind: UnwindState | None = None
    python: PythonCounts | None = None


class DiagnosticsFacts:
    """The last reading of the sampler's facts, read again when due."""

    def __init__(
        self, refresh_s: float = REFRESH_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._meter = OverheadMeter()
        self._refresh_s, self._clock = refresh_s, clock
        self._last: Facts | None = None
        self._read_at = 0.0

    def read(self, sampler: FactReader, live: bool, last: bool, headless: bool) -> Facts:
        """The facts for a snapshot: none unless BPF is ``live`` (and, for a
        ``headless`` collector, record's, this is the ``last`` snapshot); read
        now if due or ``last``, else the last reading."""
        if not live or (headless and not last):
            self._last = None
            return Facts(overhead=self._meter.measure(None))
        now = self._clock()
        if self._last is not None and not last and now - self._read_at < self._refresh_s:
            return self._last
        self._read_at = now
        self._last = Facts(
            maps=sampler.map_usage(),
            overhead=self._meter.measure(sampler.prog_stats()),
            unwind=sampler.unwind_state(),
            python=sampler.python_counts(),
        )
        return self._last
