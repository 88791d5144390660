"""Samples before BPF counts: perf_event_open's own rings, then a clean hand-over.

Owns :class:`EarlyFeed` (the compile-free :class:`PerfSampler` while BCC
compiles, or instead of BPF when it cannot load: drain, make stacks,
aggregate into a :class:`RawTick`, each sample's user stack walked from its
copied stack once its process's tables are in; samples that cannot be as
complete as BPF's (a Python process's, with no Python frames) left out and
counted by reason; hand over to BPF per CPU at the first BPF sample's time,
so nothing is lost or counted twice) and
:class:`~bpftop.tui.collect.early_stacks.EarlyStacks`, which decides each
early sample's user stack and its quality. Used only from the collector thread,
as are :class:`BackgroundLoad` (the compile's thread) and :func:`next_deadline`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from bpftop.base.errors import BpftopError
from bpftop.bpf.perf_events import PerfSample, PerfSampler
from bpftop.bpf.probes import ProbeSpec
from bpftop.bpf.raw import Addresses, RawSample, RawTick
from bpftop.tui.collect.early_stacks import EarlyStacks
from bpftop.tui.collect.niceness import Yielding
from bpftop.tui.model.snapshot import WALKER_NOT_STARTED_QUALITY

# Stack qualities, as CollectionStats counts them (samples by how their user stack was
# made); the early samples' qualities are in early_stacks.
BPF_WALKER = "BPF .eh_frame walker"
BPF_FP = "BPF frame pointers"
BPF_WALKER_NOT_STARTED = WALKER_NOT_STARTED_QUALITY  # the walker is on, but could not start
HANDOVER_PERIODS = 3  # wait this many sample periods at most for a CPU's first BPF sample
FIRST_TICK_S = 0.0  # the first early snapshot at once: samples since launch are in

EARLY_NO_TABLE = "early, unwind tables not built in time"
EARLY_NO_PYTHON = "early, no Python frames"

Qualities = Mapping[str, int]
LeaveOut = Callable[[int], str]  # tgid -> why its early samples are left out ("": kept)


class EarlyTick(NamedTuple):
    """One early tick: what counts, its samples by user-stack quality, and the
    samples left out (not complete as BPF would make them) by reason."""

    tick: RawTick
    qualities: Qualities
    left_out: Qualities


def bpf_qualities(tick: RawTick, walker: bool) -> Qualities:
    """How a tick's BPF user stacks were made. With the walker loaded, every
    probe kind's stacks are walked; a stack read by ``bpf_get_stackid`` instead
    (not a walker id, not an error) means the walker could not start: its
    context gave no user registers, or its tail call failed (no walker program
    loaded for the probe kind)."""
    if not walker:
        return {BPF_FP: tick.total_samples}
    read = sum(s.count for s in tick.samples if not s.user_error)
    not_started = max(0, read - tick.walked_samples)
    return {BPF_WALKER: tick.total_samples - not_started, BPF_WALKER_NOT_STARTED: not_started}


def early_feed(
    perf: PerfSampler | None, spec: ProbeSpec, targets: Sequence[int], wanted: bool
) -> EarlyFeed | None:
    """perf_event sampling for CPU sampling (``spec``) when ``wanted``: ``perf``,
    the sampler the CLI started, taken over, or one started now (None: ``perf``
    closed, or it cannot open: BPF's load then says why)."""
    if not wanted or not spec.is_profile:
        if perf is not None:
            perf.close()
        return None
    if perf is not None:
        return EarlyFeed(perf)
    return EarlyFeed.start(spec.number, targets, not targets)[0]


class EarlyFeed:
    """Owns a running :class:`PerfSampler` until BPF takes over (or for the whole run)."""

    def __init__(self, perf: PerfSampler, stacks: EarlyStacks | None = None) -> None:
        self._perf = perf
        self.stacks = stacks if stacks is not None else EarlyStacks(perf.targets)
        self._last = time.monotonic()
        self._lock = threading.Lock()  # guards the rings, _pending and _lost
        self._pending: list[PerfSample] = []
        self._lost = 0
        self.copies_dropped = 0  # samples whose stack copy the sampler's budget left out
        self.total = 0
        # The rings are emptied on a thread of their own (the CLI's sampler:
        # since launch): a slow tick (imports, the first symbolization, a busy
        # machine) must not make the kernel drop records.
        perf.keep_rings_empty()

    @classmethod
    def start(
        cls, sample_hz: int, targets: Iterable[int], all_processes: bool
    ) -> tuple[EarlyFeed | None, str]:
        """A running feed, or None and why perf_event sampling is not possible."""
        perf = PerfSampler(sample_hz, targets=targets, all_processes=all_processes)
        try:
            perf.open()
            perf.enable()
        except BpftopError as err:
            perf.close()
            return None, str(err)
        return cls(perf), ""

    @property
    def running(self) -> bool:
        return self._perf.opened

    @property
    def since_s(self) -> float:
        """When the perf events began sampling (CLOCK_MONOTONIC seconds)."""
        return self._perf.enabled_s

    def poll(self) -> None:
        """Parse what the rings gave into this feed."""
        with self._lock:
            if self._perf.opened:
                drained = self._perf.drain()
                self._pending += drained.samples
                self._lost += drained.lost
                self.copies_dropped += drained.copies_dropped

    def tick(
        self, until_ns: int = 0, leave_out: LeaveOut = lambda _: "", final: bool = False
    ) -> EarlyTick:
        """Everything sampled since the last tick, aggregated by equal stacks;
        ``until_ns`` (CLOCK_MONOTONIC, 0: no limit): none sampled after it (a
        record's -d ended, or ^C: the tick in progress then, up to a second while
        the first stacks are symbolized, must not stretch the recording).
        ``leave_out(tgid)``: why that process's early samples are not counted
        ("" to count them). A sample whose process's unwind tables are still
        being built waits for a later tick, unless this one is ``final``."""
        self.poll()
        return self._tick(lambda s: not until_ns or s.time_ns <= until_ns, leave_out, final)

    def hand_over(
        self, first_bpf_ns: Callable[[], Mapping[int, int]], leave_out: LeaveOut = lambda _: ""
    ) -> EarlyTick:
        """BPF counts now: keep the perf samples of each CPU taken before BPF's
        first sample there (``first_bpf_ns()``: CPU -> CLOCK_MONOTONIC ns, 0 or
        absent = none yet; polled up to HANDOVER_PERIODS periods), then stop."""
        period_s = 1.0 / max(1, self._perf.sample_hz)
        deadline = time.monotonic() + HANDOVER_PERIODS * period_s
        cpus = self._perf.cpus
        while any(not first_bpf_ns().get(c) for c in cpus) and time.monotonic() < deadline:
            time.sleep(period_s / 4)
        with self._lock:
            self._perf.disable()
        # Read after the last perf sample: a CPU still without a BPF sample had
        # none before any perf sample kept (read earlier, BPF's first sample could
        # fall between the read and the disable, and be counted twice).
        cuts = dict(first_bpf_ns())
        self.poll()
        self.close()
        return self._tick(
            lambda s: not cuts.get(s.cpu) or s.time_ns < cuts[s.cpu], leave_out, final=True
        )

    def _tick(
        self, keep: Callable[[PerfSample], bool], leave_out: LeaveOut, final: bool
    ) -> EarlyTick:
        with self._lock:
            pending, lost, self._pending, self._lost = self._pending, self._lost, [], 0
        counts: Counter[tuple[int, int, Addresses, Addresses]] = Counter()
        qualities: Counter[str] = Counter()
        left_out: Counter[str] = Counter()
        waiting: list[PerfSample] = []
        for sample in pending:
            if not keep(sample):
                continue
            reason = leave_out(sample.tgid)
            made = None if reason else self.stacks.user_stack(sample, final)
            if made is None and not reason and not final:
                waiting.append(sample)
                continue
            if made is None:
                left_out[reason or EARLY_NO_TABLE] += 1
                continue
            user, quality = made
            counts[sample.tgid, sample.tid, user, sample.kernel_stack] += 1
            qualities[quality] += 1
        if waiting:
            with self._lock:
                self._pending[:0] = waiting
        now = time.monotonic()
        tick = RawTick(
            samples=tuple(
                RawSample(tgid, tid, user, kernel, n, user_error="" if user else "EFAULT")
                for (tgid, tid, user, kernel), n in counts.items()
            ),
            lost_events=lost,
            interval_s=now - self._last,
        )
        self._last = now
        self.total += tick.total_samples
        return EarlyTick(tick, qualities, left_out)

    def close(self) -> None:
        """Stop the table builder, close the perf events (and their ring thread); safe twice."""
        self.stacks.close()
        with self._lock:
            self._perf.close()


class BackgroundLoad:
    r"""``load()`` (BCC's compile: its ctypes calls release the GIL) on a helper thread.

    ``done`` is set when it returns (``error``: what it raised). A collector
    that stops before then calls :meth:`abandon`: the helper then calls
    ``close()`` itself once the load returns, so nothing it loaded stays.
    The load runs at a lower priority (the target and the early sampler come
    first, see niceness; at most ``YIELD_S``) until someone :meth:`wait`\ s for it: then it is in
    the way (a collector with no early sampler, a record ending) and runs at
    the process's priority. (Niced to the end, a 1 s ``record -p`` on a VM kept
    busy by other jobs wrote its file after 18.2 s instead of 8.7 s.)
    """

    def __init__(
        self, load: Callable[[], None], close: Callable[[], None], on_done: Callable[[], None]
    ) -> None:
        self._load, self._close, self._on_done = load, close, on_done
        self._lock = threading.Lock()
        self._abandoned = False
        self._yielding = Yielding()  # the helper's priority
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bpftop-compile", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with self._yielding:
            try:
                self._load()
            except BaseException as exc:  # handed to the collector thread
                self.error = exc
        with self._lock:
            self.done.set()
            if self._abandoned:
                self._close()
        self._on_done()

    def wait(self) -> None:
        """Block until the load returns; from now on it runs at full priority."""
        self._yielding.hurry()
        self._thread.join()

    def abandon(self) -> bool:
        """The collector ends now: True if the load still runs (its thread will close)."""
        with self._lock:
            if not self.done.is_set():
                self._abandoned = True
            return self._abandoned

    @property
    def succeeded(self) -> bool:
        """The load is over and raised nothing."""
        return self.done.is_set() and self.error is None


def next_deadline(deadline: float, interval_s: float, now: float) -> float:
    """The next tick's time; ticks missed while a slow one ran are skipped."""
    deadline += interval_s
    return deadline if deadline > now else now + interval_s
