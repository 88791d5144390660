"""Time modes: cumulative since start, a sliding window, or exponential decay.

``TimedProfile`` is what the collector aggregates into instead of a bare
``Profile``: ``add`` per sample, ``end_tick`` once per tick, ``current`` to
freeze. It always keeps the cumulative profile; in window mode a second
profile holds only the last N seconds (ticks falling out are taken back with
``Profile.remove``); in decay mode the second profile is halved every
half-life. Switching rebuilds the second profile from the kept ticks, so the
switch is immediate. Selecting a thread uses the second profile too, for
that thread's stacks only; so do native frames (``select_native``): a
Python stack comes with its native projection (the interpreter's own frames
where the merge put Python frames, as --no-python shows them), and the
second profile, on a store of its own, holds those from the kept ticks on.
``Commands`` carries the app's requests (reset, mode, thread, native
frames) to the collector thread, which alone touches the profiles.
No Textual here.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from bpftop.symbols.frame import Frame, Unresolved
from bpftop.tui.model.idle import stack_is_idle
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import ThreadShare

IDLE_CACHE = 1 << 16  # stacks whose idleness is remembered (then the cache starts over)


class TickStacks:
    """The stacks added in one tick, as parallel lists: a few objects per tick
    for the garbage collector to track, not one tuple per stack (a 30 s window
    at 5,000 stacks a tick kept 150,000 tuples alive, and young-generation
    collections scanned them)."""

    __slots__ = ("counts", "frames", "natives", "processes", "tids")

    def __init__(self) -> None:
        self.processes: list[str] = []
        self.frames: list[tuple[Frame, ...]] = []
        self.counts: list[int] = []
        self.tids: list[int] = []
        self.natives: list[tuple[Frame, ...] | None] = []

    def append(
        self,
        process: str,
        frames: tuple[Frame, ...],
        count: int,
        tid: int,
        native: tuple[Frame, ...] | None = None,
    ) -> None:
        self.processes.append(process)
        self.frames.append(frames)
        self.counts.append(count)
        self.tids.append(tid)
        self.natives.append(native)

    def __iter__(self) -> Iterator[tuple[str, tuple[Frame, ...], int, int]]:
        """(process, root-first frames, count, tid) as given to ``add``."""
        return zip(self.processes, self.frames, self.counts, self.tids, strict=True)

    def projected(self, native: bool) -> Iterator[tuple[str, tuple[Frame, ...], int, int]]:
        """As ``__iter__``, with each stack's native frames if ``native``."""
        if not native:
            return iter(self)
        frames = (n if n is not None else f for f, n in zip(self.frames, self.natives, strict=True))
        return zip(self.processes, frames, self.counts, self.tids, strict=True)


UnknownKey = tuple[Unresolved, str]
"""Why frames went unnamed, and in which module ("" when the module does not matter)."""


class TimeMode(StrEnum):
    CUMULATIVE = "cumulative"
    WINDOW = "window"
    DECAY = "decay"


@dataclass(frozen=True, slots=True)
class TimeSetting:
    """A mode and its one parameter; ``label`` is what the header shows."""

    mode: TimeMode = TimeMode.CUMULATIVE
    window_s: float = 30.0
    half_life_s: float = 10.0

    @property
    def label(self) -> str:
        if self.mode is TimeMode.WINDOW:
            return f"last {self.window_s:g}s"
        if self.mode is TimeMode.DECAY:
            return f"decay ½ every {self.half_life_s:g}s"
        return "cumulative"

    def next(self) -> TimeSetting:
        """The setting the cycle key moves to: cumulative -> window -> decay -> ..."""
        order = list(TimeMode)
        following = order[(order.index(self.mode) + 1) % len(order)]
        return TimeSetting(following, self.window_s, self.half_life_s)


def mode_label(setting: TimeSetting, thread: int | None, native: bool = False) -> str:
    label = setting.label if thread is None else f"{setting.label}, thread {thread}"
    return f"{label}, native frames" if native else label


class TimedProfile:
    """A cumulative profile plus, outside cumulative mode or for one thread, a second one.

    ``select_thread(tid)`` makes ``current`` show one thread: its profile starts
    from the ticks still kept (the last window) and grows from there.
    """

    def __init__(self, setting: TimeSetting = TimeSetting(), *, count_idle: bool = True) -> None:
        """``count_idle`` False: the probe's samples cannot be idle (a running
        thread's, see tui/model/idle.py), so none is looked at for it."""
        self.cumulative = Profile()
        self._count_idle = count_idle
        self.setting = setting
        self.thread: int | None = None
        self.native = False  # native frames only (see select_native)
        self.thread_samples: dict[int, int] = {}
        self.thread_idle: dict[int, int] = {}  # of which idle (tui/model/idle.py)
        self._idle_of: dict[int, tuple[tuple[Frame, ...], bool]] = {}  # by id(frames)
        self.unknown: dict[UnknownKey, int] = {}  # samples with such a frame, cumulative
        self._moving: Profile | None = None
        self._ticks: deque[tuple[float, TickStacks]] = deque()
        self._pending = TickStacks()
        self._since_halving_s = 0.0
        self.set_mode(setting)

    @property
    def current(self) -> Profile:
        """The profile the snapshot shows in the current mode."""
        return self._moving if self._moving is not None else self.cumulative

    def add(
        self,
        process: str,
        frames: Sequence[Frame],
        count: int = 1,
        tid: int = 0,
        unknown: Sequence[UnknownKey] = (),
        native: tuple[Frame, ...] | None = None,
    ) -> None:
        """One stack's samples (of thread ``tid``); ``unknown`` says why (and
        where) frames of this stack went unnamed, each reason once; ``native``:
        its native frames where they differ (a stack with Python frames)."""
        if count <= 0:
            return
        kept = frames if isinstance(frames, tuple) else tuple(frames)
        self.cumulative.add(process, kept, count)
        self.thread_samples[tid] = self.thread_samples.get(tid, 0) + count
        if self._count_idle and self._idle(kept):
            self.thread_idle[tid] = self.thread_idle.get(tid, 0) + count
        for key in unknown:
            self.unknown[key] = self.unknown.get(key, 0) + count
        if self._moving is not None and (self.thread is None or tid == self.thread):
            shown = native if self.native and native is not None else kept
            self._moving.add(process, shown, count)
        self._pending.append(process, kept, count, tid, native)

    def end_tick(self, interval_s: float) -> None:
        """Close the tick: remember it, expire old ticks, decay when due."""
        self._ticks.append((interval_s, self._pending))
        self._pending = TickStacks()
        self._expire()
        if self.setting.mode is TimeMode.DECAY and self._moving is not None:
            self._since_halving_s += interval_s
            while self._since_halving_s >= self.setting.half_life_s > 0:
                self._since_halving_s -= self.setting.half_life_s
                self._moving.halve()

    def _expire(self) -> None:
        """Keep the ticks of the last window (all modes, so a switch is immediate)."""
        kept_s = sum(interval for interval, _ in self._ticks)
        while self._ticks and kept_s - self._ticks[0][0] >= self.setting.window_s:
            interval, stacks = self._ticks.popleft()
            kept_s -= interval
            if self.setting.mode is TimeMode.WINDOW and self._moving is not None:
                for process, frames, count, tid in stacks.projected(self.native):
                    if self.thread is None or tid == self.thread:
                        self._moving.remove(process, frames, count)

    def set_mode(self, setting: TimeSetting) -> None:
        """Switch modes; a window starts from the ticks still kept."""
        self.setting = setting
        self._rebuild()

    def select_thread(self, tid: int | None) -> None:
        """Show one thread (None: all threads again)."""
        self.thread = tid
        self._rebuild()

    def select_native(self, on: bool) -> None:
        """Show native frames only (the interpreter's own in place of Python's),
        from the kept ticks on; or the stacks as added again."""
        self.native = on
        self._rebuild()

    def _rebuild(self) -> None:
        self._since_halving_s = 0.0
        if self.setting.mode is TimeMode.CUMULATIVE and self.thread is None and not self.native:
            self._moving = None
            return
        self._expire()
        # Same shape as the cumulative profile, its own counts; native frames: their own shape.
        self._moving = Profile(None if self.native else self.cumulative.store)
        for _, stacks in self._ticks:
            self._replay(stacks)
        self._replay(self._pending)

    def _replay(self, stacks: TickStacks) -> None:
        assert self._moving is not None
        for process, frames, count, tid in stacks.projected(self.native):
            if self.thread is None or tid == self.thread:
                self._moving.add(process, frames, count)

    @property
    def label(self) -> str:
        """The mode, and the thread when one is selected (what the header shows)."""
        return mode_label(self.setting, self.thread, self.native)

    def _idle(self, frames: tuple[Frame, ...]) -> bool:
        """``stack_is_idle``, once per stack tuple (the collector passes one per stack)."""
        found = self._idle_of.get(id(frames))
        if found is None or found[0] is not frames:
            if len(self._idle_of) > IDLE_CACHE:
                self._idle_of.clear()
            found = self._idle_of[id(frames)] = (frames, stack_is_idle(frames))
        return found[1]

    def thread_shares(self, names: Mapping[int, str]) -> tuple[ThreadShare, ...]:
        """Samples per thread, hottest first, named from ``names`` (tid -> comm)."""
        idle = self.thread_idle
        shares = [
            ThreadShare(tid, names.get(tid, ""), n, idle.get(tid, 0))
            for tid, n in self.thread_samples.items()
        ]
        shares.sort(key=lambda t: (-t.samples, t.tid))
        return tuple(shares)

    def reset(self) -> None:
        """Forget everything (the mode and the thread stay)."""
        self.cumulative.reset()
        self.thread_samples = {}
        self.thread_idle = {}
        self.unknown = {}
        self._ticks.clear()
        self._pending = TickStacks()
        self._rebuild()


class Commands:
    """Requests from the app thread, applied by the collector thread between ticks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reset = False
        self._setting: TimeSetting | None = None
        self._thread: tuple[int | None] | None = None
        self._native: bool | None = None

    def request_thread(self, tid: int | None) -> None:
        with self._lock:
            self._thread = (tid,)

    def request_native(self, on: bool) -> None:
        with self._lock:
            self._native = on

    def request_reset(self) -> None:
        with self._lock:
            self._reset = True

    def request_mode(self, setting: TimeSetting) -> None:
        with self._lock:
            self._setting = setting

    def apply(self, profile: TimedProfile) -> Applied:
        """Apply what was asked since the last call (true if anything changed)."""
        with self._lock:
            reset, setting, thread, native = self._reset, self._setting, self._thread, self._native
            self._reset, self._setting, self._thread, self._native = False, None, None, None
        if setting is not None:
            profile.set_mode(setting)
        if thread is not None:
            profile.select_thread(thread[0])
        if native is not None and native != profile.native:
            profile.select_native(native)
        if reset:
            profile.reset()
        changed = reset or setting is not None or thread is not None or native is not None
        return Applied(changed, reset)


@dataclass(frozen=True, slots=True)
class Applied:
    """What ``Commands.apply`` did: anything at all, and whether that was a reset."""

    changed: bool
    reset: bool

    def __bool__(self) -> bool:
        return self.changed
