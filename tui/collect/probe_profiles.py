"""One profile per probe used in a session, so switching probes throws nothing away.

The collector aggregates into the active probe's :class:`TimedProfile` and
counters; a switch files them under their spec and makes (or takes back) the
new probe's. ``ProbeRequest`` hands a spec typed in the app to the collector
thread. Weighted probes (uretprobe latency, offcpu) add nanoseconds, not
samples, to their profile; ``unit`` says which. No Textual here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from bpftop.tui.collect.counters import CollectionCounters
from bpftop.tui.model.timemode import TimedProfile

WEIGHT_UNIT = "ns"  # what a weighted probe's counts are


@dataclass(slots=True)
class ProbeState:
    """What was collected under one probe spec."""

    profile: TimedProfile
    counters: CollectionCounters
    weighted: bool
    events: int = 0  # probe hits (weighted probes: calls / blocks, beside the time)


class ProbeProfiles:
    """Probe spec -> its state; ``active`` is the one being filled."""

    def __init__(self, spec: str, weighted: bool) -> None:
        self._states: dict[str, ProbeState] = {}
        self.active_spec = spec
        self.active = self._state(spec, weighted, TimedProfile())

    def _state(self, spec: str, weighted: bool, profile: TimedProfile) -> ProbeState:
        state = self._states.get(spec)
        if state is None:
            state = ProbeState(profile, CollectionCounters(spec), weighted)
            self._states[spec] = state
        return state

    def use(self, spec: str, weighted: bool) -> ProbeState:
        """Make ``spec`` active in the current time mode and thread choice (a probe
        used before takes them too: what the app asked for holds across switches)."""
        current = self.active.profile
        self.active_spec = spec
        self.active = self._state(spec, weighted, TimedProfile(current.setting))
        profile = self.active.profile
        if profile.setting != current.setting:
            profile.set_mode(current.setting)
        if profile.thread != current.thread:
            profile.select_thread(current.thread)
        return self.active

    @property
    def specs(self) -> tuple[str, ...]:
        """Every probe used, in first-use order."""
        return tuple(self._states)

    @property
    def unit(self) -> str:
        return WEIGHT_UNIT if self.active.weighted else ""

    def reset_counters(self) -> None:
        self.active.counters = CollectionCounters(self.active_spec)
        self.active.events = 0


class ProbeRequest:
    """A spec typed in the app, waiting for the collector thread (latest wins)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._text: str | None = None

    def put(self, text: str) -> None:
        with self._lock:
            self._text = text

    def take(self) -> str | None:
        with self._lock:
            text, self._text = self._text, None
            return text
