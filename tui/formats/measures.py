"""What one count of a saved profile measures, by the probe that recorded it.

Every exporter asks ``measure_of(meta)`` instead of assuming CPU time:

- CPU sampling (``profile:hz:N``, ``software:cpu-clock``/``task-clock``): a
  count is one sample, worth the probe's own period of CPU time (1e9/N ns for
  ``profile:hz:N``, whatever ``-F`` said; the period in ns for the clocks).
- Event probes (uprobe, kprobe, kretprobe, usdt, tracepoint, other software
  and hardware events): a count is one sample of the event: ``calls``,
  ``hits`` or the event's own name; a software/hardware sample stands for
  ``period`` events.
- Time probes (uretprobe, offcpu): a count is nanoseconds (``wall`` time in
  the function, ``off-cpu`` time blocked).

A profile without a probe that parses (old files, other tools) falls back on
its ``frequency_hz`` (CPU sampling) or its ``unit``. No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from bpftop.bpf.probes import Attach, ProbeSpecError, parse_spec
from bpftop.tui.formats.saved import ProfileMeta

_CLOCKS = ("cpu-clock", "task-clock")


@dataclass(frozen=True, slots=True)
class Measure:
    """One count is one ``event`` (a sample, a call, a hit) standing for ``period``
    events, or, when ``time`` is set and ``period`` is 0, ``time`` nanoseconds.
    CPU sampling has both: an ``event`` sample worth ``cpu_ns`` of ``time``."""

    event: str = "samples"
    time: str = ""  # "cpu", "wall", "off-cpu"; "" for pure counts
    cpu_ns: int = 0  # CPU sampling: nanoseconds of CPU per sample
    period: int = 1  # events per sample (software/hardware periods)

    @property
    def timed(self) -> bool:
        """True when a count is nanoseconds, not a number of samples or events."""
        return bool(self.time) and not self.cpu_ns

    def words(self, count: int) -> str:
        """A count in words with its unit: ``1,234 calls``, ``12.500 ms of off-cpu time``."""
        if self.timed:
            return f"{_duration(count)} of {self.time} time"
        text = f"{count:,} {self.event}"
        if self.cpu_ns:
            text += f" ({_duration(count * self.cpu_ns)} of CPU)"
        elif self.period > 1:
            text += f" (x{self.period:,} events)"
        return text


def _duration(ns: int) -> str:
    for limit, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if ns >= limit:
            return f"{ns / limit:,.3f} {unit}"
    return f"{ns:,} ns"


def measure_of(meta: ProfileMeta) -> Measure:
    """What a count of a profile recorded with ``meta`` is."""
    found = probe_measure(meta.probe)
    if found is not None:
        return found
    if meta.timed:
        return Measure("samples", "wall")
    hz = meta.frequency_hz
    return Measure("samples", "cpu", 1_000_000_000 // hz) if hz > 0 else Measure()


def probe_measure(probe: str) -> Measure | None:
    """What a count of ``probe`` is; None for a spec that does not parse."""
    try:
        spec = parse_spec(probe) if probe else None
    except ProbeSpecError:
        spec = None
    if spec is None:
        return None
    rule = spec.rule
    if rule.time:
        return Measure(rule.events, rule.time)
    if rule.attach is not Attach.PERF_EVENT:
        return Measure(rule.events)
    if spec.is_profile:
        return Measure("samples", "cpu", 1_000_000_000 // max(1, spec.number))
    if spec.name in _CLOCKS:
        return Measure("samples", "cpu", max(1, spec.number))
    return Measure(spec.name, period=max(1, spec.number))
