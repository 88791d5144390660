"""Samples before BPF counts: perf_event_open's own rings, then a clean hand-over.

Owns :class:`EarlyFeed` (the compile-free :class:`PerfSampler` while BCC
compiles, or instead of BPF when it cannot load: drain, make stacks,
aggregate into a :class:`RawTick`, each sample's user stack walked from its
copied stack once its process's tables are in; samples that cannot be as
complete as BPF's (a Python process's, with no Python frames) left out and
counted by reason; a process that exec'd described anew, and its samples of
any image but the one described left out and counted; hand over to BPF per
CPU at the first BPF sample's time, so nothing is lost or counted twice) and
:class:`~bpftop.tui.collect.early_stacks.EarlyStacks`, which decides each
early sample's user stack and its quality. Used only from the collector thread,
as are :class:`BackgroundLoad` (the compile's thread) and :func:`next_deadline`.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from bpftop.base.errors import BpftopError
from bpftop.bpf.perf_events import ExecRecord, PerfSample, PerfSampler
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
EARLY_OTHER_IMAGE = "early, of an image replaced before it was read"
EXECS_KEPT_NS = 1_000_000_000  # an exec is forgotten this long after the last sample before it
MAX_EXECUTING = 4096  # processes that exec'd kept track of (the oldest go first)

Qualities = Mapping[str, int]
LeaveOut = Callable[[int], str]  # tgid -> why its early samples are left out ("": kept)
# tgid exec'd: read its new image for names now; the image number its samples
# are named by (None: it is gone)
Describe = Callable[[int], int | None]


@dataclass(slots=True)
class _Execs:
    """A process that exec'd while sampled: the times of its execs (CLOCK_MONOTONIC
    ns, sorted; the ``forgotten`` oldest dropped) and which image's maps were read
    last (``read_in``: how many execs it had made then; None: none yet); ``gone``:
    its latest image could not be read."""

    times: list[int] = field(default_factory=list)
    forgotten: int = 0
    read_in: int | None = None
    image: int = 0  # the image number ``read_in``'s samples are named by
    gone: bool = False

    @property
    def count(self) -> int:
        return self.forgotten + len(self.times)

    def image_at(self, time_ns: int) -> int:
        """How many execs it had made at ``time_ns``."""
        return self.forgotten + bisect.bisect_left(self.times, time_ns)

    def forget_before(self, time_ns: int) -> None:
        drop = bisect.bisect_left(self.times, time_ns)
        self.forgotten += drop
        del self.times[:drop]


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
        self._execs: dict[int, _Execs] = {}  # processes that exec'd while sampled
        self._polled_ns = 0  # when the rings were last drained (CLOCK_MONOTONIC)
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

    def wake_on_exec(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` (from the ring thread) when a target has exec'd: a
        tick then reads its new image, and fewer of its samples wait in an
        image no tick has read."""
        self._perf.on_exec = wake

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
                self._polled_ns = time.monotonic_ns()
                drained = self._perf.drain()
                self._pending += drained.samples
                self._lost += drained.lost
                self.copies_dropped += drained.copies_dropped
                self._note_execs(drained.execs)

    def _note_execs(self, records: Iterable[ExecRecord]) -> None:
        for record in records:
            execs = self._execs.pop(record.tgid, None) or _Execs()
            self._execs[record.tgid] = execs  # (last: the oldest are first)
            bisect.insort(execs.times, record.time_ns)
            execs.gone = False
        while len(self._execs) > MAX_EXECUTING:
            del self._execs[next(iter(self._execs))]

    def tick(
        self,
        until_ns: int = 0,
        leave_out: LeaveOut = lambda _: "",
        final: bool = False,
        describe: Describe = lambda _: 0,
    ) -> EarlyTick:
        """Everything sampled since the last tick, aggregated by equal stacks;
        ``until_ns`` (CLOCK_MONOTONIC, 0: no limit): none sampled after it (a
        record's -d ended, or ^C: the tick in progress then, up to a second while
        the first stacks are symbolized, must not stretch the recording).
        ``leave_out(tgid)``: why that process's early samples are not counted
        ("" to count them). A sample whose process's unwind tables are still
        being built waits for a later tick, unless this one is ``final``.
        ``describe(tgid)``: a process exec'd, read its new image's maps for its
        names now (this feed reads them for its walks)."""
        self.poll()
        return self._tick(
            lambda s: not until_ns or s.time_ns <= until_ns, leave_out, final, describe
        )

    def hand_over(
        self,
        first_bpf_ns: Callable[[], Mapping[int, int]],
        leave_out: LeaveOut = lambda _: "",
        describe: Describe = lambda _: 0,
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
        try:  # (the execs are still told: one after the disable makes a read no image's)
            return self._tick(
                lambda s: not cuts.get(s.cpu) or s.time_ns < cuts[s.cpu], leave_out, True, describe
            )
        finally:
            self.close()

    def _describe_execs(self, describe: Describe) -> None:
        """Each process that exec'd since it was last described is described
        anew (``describe`` names, this feed's walks); the maps read count for
        the image it had then if no exec of it came in meanwhile, else it is
        read again next tick (its samples of the image read before are still
        named by that image's number)."""
        for tgid, execs in tuple(self._execs.items()):
            if execs.read_in == execs.count or execs.gone:
                continue
            before = execs.count
            image = describe(tgid)
            if image is None:
                execs.gone = True
                continue
            self.stacks.reread(tgid)
            with self._lock:
                self._note_execs(self._perf.take_execs())
            if execs.count == before:
                execs.read_in, execs.image = before, image

    def _forget_execs(self) -> None:
        """Forget the execs no sample waiting or to come was taken before (a
        second's margin before the last drain, for samples not taken from the rings yet)."""
        with self._lock:
            oldest = min((s.time_ns for s in self._pending), default=self._polled_ns)
        cutoff = min(oldest, self._polled_ns - EXECS_KEPT_NS)
        for execs in self._execs.values():
            execs.forget_before(cutoff)

    def _image(self, sample: PerfSample) -> int | None:
        """The image number ``sample`` is named by (0 for a process that has
        not exec'd); None if it was taken in an image other than the one its
        process's maps were read in (it exec'd since, or before they were read)."""
        execs = self._execs.get(sample.tgid)
        if execs is None:
            return 0
        return execs.image if execs.image_at(sample.time_ns) == execs.read_in else None

    def _tick(
        self, keep: Callable[[PerfSample], bool], leave_out: LeaveOut, final: bool,
        describe: Describe,
    ) -> EarlyTick:  # fmt: skip
        with self._lock:
            pending, lost, self._pending, self._lost = self._pending, self._lost, [], 0
        counts: Counter[tuple[int, int, Addresses, Addresses, int]] = Counter()
        qualities: Counter[str] = Counter()
        left_out: Counter[str] = Counter()
        waiting: list[PerfSample] = []

        def count(samples: Iterable[PerfSample]) -> None:
            for sample in samples:
                if not keep(sample):
                    continue
                image = self._image(sample)
                reason = EARLY_OTHER_IMAGE if image is None else leave_out(sample.tgid)
                made = None if reason else self.stacks.user_stack(sample, final)
                if made is None and not reason and not final:
                    waiting.append(sample)
                    continue
                if made is None:
                    left_out[reason or EARLY_NO_TABLE] += 1
                    continue
                user, quality = made
                counts[sample.tgid, sample.tid, user, sample.kernel_stack, image or 0] += 1
                qualities[quality] += 1

        # First the samples of images already read (walked with their maps,
        # named by their number), then the new images are read for the rest.
        read = [self._image(s) is not None for s in pending]
        count(s for s, known in zip(pending, read, strict=True) if known)
        self._describe_execs(describe)
        count(s for s, known in zip(pending, read, strict=True) if not known)
        if waiting:
            with self._lock:
                self._pending[:0] = waiting
        self._forget_execs()
        now = time.monotonic()
        tick = RawTick(
            samples=tuple(
                RawSample(
                    tgid, tid, user, kernel, n, user_error="" if user else "EFAULT", image=image
                )
                for (tgid, tid, user, kernel, image), n in counts.items()
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
