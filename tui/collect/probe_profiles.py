"""One profile per probe used in a session, so switching probes throws nothing away.

The collector aggregates into the active probe's :class:`TimedProfile` and
counters; a switch files them under their spec and makes (or takes back) the
new probe's. ``ProbeRequest`` hands a spec typed in the app to the collector
thread. Weighted probes (uretprobe latency, offcpu) add nanoseconds, not
samples, to their profile; ``unit`` says which. For ``record`` they also
count their hits per stack (``stack_events``: pprof writes calls or blocks
beside the time); the live view, which writes folded time only, does not
pay for that second profile. No Textual here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from bpftop.bpf.raw import RawSample
from bpftop.tui.collect.counters import CollectionCounters
from bpftop.tui.collect.stacks import Stack
from bpftop.tui.model.idle import idle_applies
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.timemode import TimedProfile

WEIGHT_UNIT = "ns"  # what a weighted probe's counts are


@dataclass(slots=True)
class ProbeState:
    """What was collected under one probe spec."""

    profile: TimedProfile
    counters: CollectionCounters
    weighted: bool
    events: int = 0  # probe hits (weighted probes: calls / blocks, beside the time)
    stack_events: Profile = field(default_factory=Profile)  # hits per stack (record only)

    def add(self, label: str, stack: Stack, sample: RawSample, count_hits: bool) -> None:
        """One sample record of ``stack``: its count into the profile, or a weighted
        probe's nanoseconds (and, with ``count_hits``, its count into ``stack_events``)."""
        if not self.weighted:
            self.profile.add(
                label, stack.frames, sample.count, sample.tid, stack.unknown, stack.native
            )
            return
        self.profile.add(
            label, stack.frames, sample.weight_ns, sample.tid, stack.unknown, stack.native
        )
        if count_hits:
            self.stack_events.add(label, stack.frames, sample.count)


class ProbeProfiles:
    """Probe spec -> its state; ``active`` is the one being filled."""

    def __init__(self, spec: str, weighted: bool) -> None:
        self._states: dict[str, ProbeState] = {}
        self.active_spec = spec
        self.active = self._state(spec, weighted, TimedProfile(count_idle=idle_applies(spec)))

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
        fresh = TimedProfile(current.setting, count_idle=idle_applies(spec))
        self.active = self._state(spec, weighted, fresh)
        profile = self.active.profile
        if profile.setting != current.setting:
            profile.set_mode(current.setting)
        if profile.thread != current.thread:
            profile.select_thread(current.thread)
        if profile.native != current.native:
            profile.select_native(current.native)
        return self.active

    @property
    def specs(self) -> tuple[str, ...]:
        """Every probe used, in first-use order."""
        return tuple(self._states)

    @property
    def unit(self) -> str:
        return WEIGHT_UNIT if self.active.weighted else ""

    def events_tree(self) -> CallNode | None:
        """The active weighted probe's hits per stack, if it counted them."""
        counted = self.active.stack_events
        return counted.tree() if self.active.weighted and counted.total_samples else None

    def reset_counters(self) -> None:
        self.active.counters = CollectionCounters(self.active_spec)
        self.active.events = 0
        self.active.stack_events = Profile()


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
