"""The collector thread: drain the kernel, symbolize, aggregate, post snapshots.

One thread does all the slow work; the app (or ``record``) only sees the immutable
:class:`Snapshot` values it posts. For CPU sampling, perf_event samples
(:mod:`bpftop.tui.collect.early`) fill the profile while BCC compiles on a helper thread, and BPF
takes over per CPU without gap or overlap; if BPF cannot load, perf_event sampling goes on and
every snapshot says why. The app's requests (reset, time mode, thread, native frames, source lines,
probe switch: :mod:`bpftop.tui.collect.probe_profiles`) wake the thread and are applied between
ticks, also after the target exited. Each distinct stack is symbolized once, Python frames merged
in (:mod:`bpftop.tui.collect.stacks`)."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from bpftop.base.crash_log import log_exception
from bpftop.base.errors import BpftopError, InternalError
from bpftop.bpf.perf_events import PerfSampler
from bpftop.bpf.probes import parse_spec
from bpftop.bpf.raw import RawTick
from bpftop.symbols.frame import Unresolved
from bpftop.symbols.hints import Hints
from bpftop.symbols.proc.images import read_image
from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.collect import unwind_feed
from bpftop.tui.collect.diag_facts import DiagnosticsFacts
from bpftop.tui.collect.early import (
    EARLY_NO_PYTHON,
    FIRST_TICK_S,
    BackgroundLoad,
    EarlyFeed,
    Qualities,
    bpf_qualities,
    early_feed,
    next_deadline,
)
from bpftop.tui.collect.image_watch import ImageWatch
from bpftop.tui.collect.probe_profiles import ProbeProfiles, ProbeRequest
from bpftop.tui.collect.process_watch import ProcessWatch, trim_heap, wake_at_exit
from bpftop.tui.collect.sampler import Sampler
from bpftop.tui.collect.stacks import StackCache, unknown_shares
from bpftop.tui.collect.targets import (
    Followed,
    ProcessLabels,
    SystemWatch,
    has_maps,
    held_command,
    release,
    resume,
)
from bpftop.tui.collect.thread_names import ThreadNames
from bpftop.tui.collect.unwind_feed import UnwindFeed, attach_unwinder, prefetch_unwind_tables
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import Phase, Snapshot
from bpftop.tui.model.timemode import Commands, TimedProfile, TimeSetting, UnknownKey

PREFETCH_WAIT_S = 3.0  # BPF attaches after this at the latest, tables or not
# Ticks a launched command's interpreter is looked for again after an exec
# (it may be mapped, or start, only after its loader is done).
PYTHON_TRIES = 5
PYTHON_START_WAIT_S = 0.2  # ... and waited for at once, this long at most
# A launched command's probe not found yet (see CpuSampler.start) is looked for
# at each of its execs; once it has run this long since the last, it fails.
PROBE_WAIT_S = 2.0
COLLECTOR_THREAD = "bpftop-collect"  # its name in /proc/PID/task/*/comm (top -H)


def name_thread(name: str) -> None:
    """Name the calling thread for ps, top -H and /proc (15 bytes at most)."""
    with contextlib.suppress(OSError):
        Path("/proc/thread-self/comm").write_text(name[:15])


class Collector:
    """A :class:`~bpftop.tui.collect.snapshot_source.SnapshotSource` over a real sampler."""

    def __init__(
        self,
        pid: int,
        sampler: Sampler,
        interval_s: float,
        *,
        offsets: bool = False,
        mangled: bool = False,
        short_names: bool = False,
        extra_pids: Sequence[int] = (),
        system_wide: bool = False,
        launched: subprocess.Popen[bytes] | None = None,
        early: PerfSampler | None = None,
        early_sampling: bool = True,
        python_frames: bool = True,
    ) -> None:
        """``offsets``: frames named ``function+0xOFF`` (perf's sym+off); ``mangled``:
        as the symbol table spells them; ``short_names``: C++ functions without
        parameters and return type. ``pid``: the main target (the header's),
        ``extra_pids`` more (-p -p); ``system_wide``: every process (-a, ``pid`` 0);
        ``launched``: a command held before its first instruction, let go once
        probes are attached; ``early``: perf_event sampling the CLI started, taken
        over; ``early_sampling`` False: BPF's samples only (--no-early);
        ``python_frames`` False: native frames only for CPython (--no-python)."""
        self.pid = pid
        self._targets = () if system_wide else (pid, *extra_pids)
        self._launched = launched
        self.interval_s = interval_s
        self._sampler = sampler
        self._symbolizer = Symbolizer(prefetch_kernel=early is not None)  # samples from launch on
        self._labels = ProcessLabels(self._symbolizer.images.comm)
        self._stacks = StackCache(
            self._symbolizer,
            offsets=offsets,
            mangled=mangled,
            python=python_frames,
            short_names=short_names,
        )
        self.short_names = short_names  # asked for by the app (a key), read between ticks
        self._hints = Hints()
        self._probes = ProbeProfiles(sampler.probe, sampler.spec.weighted)
        self._probe_request = ProbeRequest()
        self._probe_message = ""
        self._commands = Commands()
        self._threads = ThreadNames(python_of=self._stacks.python.runtime)
        # children not followed (no --children) are counted: the header suggests following them
        self._count_children = not getattr(sampler, "follow_children", False)
        self._process: ProcessWatch | SystemWatch = (
            SystemWatch(self._threads)
            if system_wide
            else ProcessWatch(pid, held_command(launched), self._count_children)
        )
        self._followed = Followed(self._targets[1:], self._symbolizer, sampler, self._labels)
        self._facts = DiagnosticsFacts()  # Diagnostics' and the header's cost figures
        self._seq = 0
        self._stop, self._stop_ns = threading.Event(), 0  # stop(): when it was first called
        self._wake = threading.Event()  # a request arrived, the target exited, or stop
        if not system_wide:
            wake_at_exit(pid, self._wake.set, self._stop)
        self.source_lines = False  # asked for by the app (the L key), read between ticks
        self.headless = False  # record: reads the last snapshot's tree and table; no hints (dpkg)
        self.duration_s: float | None = None  # record's -d: no early sample past it
        self.finished = threading.Event()  # collection is over (target gone, or an error)
        self._thread: threading.Thread | None = None
        self._unwind_feed: UnwindFeed | None = None  # tables for the .eh_frame walker
        self._images = ImageWatch(self._symbolizer.images, self._image_of, self._reread)
        self._early_perf = early
        self._exec_read_ahead = 0  # execs of ``pid`` read before their events came
        self._early_images = 0  # the last image number _early_exec gave (counts down)
        self._probe_tried_s = 0.0  # when a probe not attached yet was last looked for
        self._followed_ticks: list[RawTick] = []  # a probe's last counts before it followed an exec
        self._reread_next: set[int] = set()  # images read at a held exec: read again next tick
        self._python_next: set[int] = set()  # interpreters to look for again next tick
        self._python_tries: Counter[int] = Counter()  # ... how many times so far
        self._early_sampling = early_sampling
        self._loading: BackgroundLoad | None = None  # the compile, on its own thread
        self._note = ""  # said in every snapshot: BPF could not load
        self._notices: tuple[str, ...] = ()  # standing facts (fallback headers): Diagnostics
        self.bpf_problem = ""  # why BPF could not load, when perf_event sampled instead
        # When the samples that count began (CLOCK_MONOTONIC s; None: not yet):
        # the early sampler's start, unless every target's early samples are left out.
        self.counting_since: float | None = None
        self._on_snapshot: Callable[[Snapshot], None] = lambda _: None
        self._on_error: Callable[[BpftopError], None] = lambda _: None
        self.last: Snapshot | None = None

    @property
    def launched(self) -> subprocess.Popen[bytes] | None:
        """The command bpftop started held (``-- COMMAND``), or None."""
        return self._launched

    # -- SnapshotSource -------------------------------------------------------
    def start(
        self,
        on_snapshot: Callable[[Snapshot], None],
        on_error: Callable[[BpftopError], None],
    ) -> None:
        self._on_snapshot, self._on_error = on_snapshot, on_error
        self._thread = threading.Thread(target=self._run, name="bpftop-collector", daemon=True)
        self._thread.start()

    def stop(self, wait: bool = True) -> None:
        """Last drain (no perf sample after it), detach, join; idempotent; ``wait``: the compile."""
        self._stop_ns = self._stop_ns or time.monotonic_ns()
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._close_sampler()
        if self._loading is not None and wait:
            self._loading.wait()

    python_notes = property(lambda self: self._stacks.python.notes)  # Pythons refused
    compiling = property(lambda self: self._loading is not None and not self._loading.done.is_set())

    # -- ControlledSource: called on the app thread, applied on ours ----------
    def reset(self) -> None:
        self._commands.request_reset()
        self._wake.set()

    def set_time_mode(self, setting: TimeSetting) -> None:
        self._commands.request_mode(setting)
        self._wake.set()

    def select_thread(self, tid: int | None) -> None:
        self._commands.request_thread(tid)
        self._wake.set()

    def show_native_frames(self, on: bool) -> None:
        self._commands.request_native(on)
        self._wake.set()

    def switch_probe(self, text: str) -> None:
        """Attach ``text``'s probe instead (answer: next ``probe_message``; refused: no change)."""
        self._probe_request.put(text)
        self._wake.set()

    def show_source_lines(self, on: bool) -> None:
        """From now on, give new stacks' frames ``file:line`` (DWARF, cached per address)."""
        self.source_lines = on
        self._wake.set()

    def use_short_names(self, on: bool) -> None:
        """Name C++ functions short (or in full) from now on; counts start again
        (a tree holding both forms of one function would split its time)."""
        if on != self.short_names:
            self.short_names = on
            self._commands.request_reset()
            self._wake.set()

    # -- the thread -----------------------------------------------------------
    def _run(self) -> None:
        name_thread(COLLECTOR_THREAD)
        feed: EarlyFeed | None = None
        try:
            self._post(Phase.COMPILING)
            feed = self._start_early()
            # Unwind tables (every target's; -a: busy and sampled ones') are built while BPF loads.
            self._unwind_feed = prefetch_unwind_tables(self._sampler, self._targets, feed)
            if self._unwind_feed is not None:
                self._unwind_feed.exec_seen = self._images.exec_seen
            self._loading = BackgroundLoad(self._load, self._sampler.close, self._wake.set)
            for pid in self._targets:
                self._symbolizer.prepare(pid, preload=True)
            self._stacks.python.check_early(self._targets)  # a refused Python: said now
            if feed is not None and not (
                self._targets and all(self._early_left_out(p) for p in self._targets)
            ):
                self.counting_since = feed.since_s
            ended = None
            if feed is not None:  # stopped, or the target exited, during the compile: not None
                ended = self._loop(partial(self._absorb_early, feed), self._loading)
            if ended is None:
                self._loading.wait()
                if self._loading.error is not None:
                    feed = feed or self._start_early(bpf_failed=True)
                    ended = self._without_bpf(feed, self._loading.error)
                else:
                    self._start_bpf(feed)
                    ended = self._loop(self._bpf_tick)
                    if self._sampler.waiting is not None:  # found in none of the command's images
                        raise self._sampler.waiting
            self._finish(bool(ended))
        except BpftopError as err:
            self._on_error(err)
        except Exception as exc:  # a bug of ours: still one line, and the data stays
            where = log_exception("internal error in the collector", exc)
            self._on_error(
                InternalError(
                    f"internal error in the collector: {exc!r}", f"{where}; please report it"
                )
            )
        finally:
            if feed is not None:
                feed.close()
            if self._unwind_feed is not None:
                self._unwind_feed.close(timeout_s=0)  # it stops by itself once the sampler closes
            self._images.close()
            self._close_sampler()
            self.finished.set()

    def _load(self) -> None:
        """BPF's load (on the loading thread), then the tables being built for
        the processes known now, PREFETCH_WAIT_S at most: a BPF sample of a
        process whose tables are not in has only its frame-pointer stack."""
        self._sampler.load()
        if self._unwind_feed is not None:
            self._unwind_feed.wait_prefetched(PREFETCH_WAIT_S)

    def _start_early(self, bpf_failed: bool = False) -> EarlyFeed | None:
        """perf_event samples while BCC compiles, or once BPF failed (a held command: only then)."""
        perf, self._early_perf = self._early_perf, None
        wanted = self._early_sampling and (bpf_failed or self._launched is None)
        feed = early_feed(perf, self._sampler.spec, self._targets, wanted)
        if feed is not None:
            feed.wake_on_exec(self._wake.set)
        if feed is not None and bpf_failed and self._launched is not None:
            release(self._launched, held_at_exec=False)  # it runs on from its exec
            self._on_exec(self.pid)
        return feed

    def _start_bpf(self, feed: EarlyFeed | None) -> None:
        """BPF is loaded: attach it, and hand over from the early sampler."""
        self._sampler.set_targets(self._targets)
        for pid in self._targets:  # image 0, what runs now (drained after an exec, maybe)
            self._images.capture(pid)
            self._symbolizer.note_image(pid, 0)
        self._stacks.python.attach(self._sampler, self._targets)  # a launch: at its exec
        attach_unwinder(self._unwind_feed, self._sampler)
        self._sampler.start(until_exec=self._launched is not None)  # (its file: in a chroot?)
        self._probe_tried_s = time.monotonic()
        self.counting_since = self.counting_since or time.monotonic()
        trim_heap()  # give back what the compile left free
        if feed is not None:
            self._absorb(
                *feed.hand_over(
                    self._sampler.first_sample_ns, self._early_left_out, self._early_exec
                )
            )
        if self._launched is not None:
            self._sampler.hold_at_exec(self.pid)
            release(self._launched)
            self._on_exec(self.pid)
            self._follow_probe()  # held at its first exec: a probe by name goes on its files
            self._exec_read_ahead = 1  # this exec's event is still to come: read already
            if self._unwind_feed is not None:  # the exec thread sees a later stop at once
                self._unwind_feed.on_exec = self._exec_seen
            self._resume_held()
        note = self._sampler.header_note
        self._notices = (note,) if note else ()
        self._post(Phase.SAMPLING, self._note)

    def _bpf_tick(self) -> None:
        self._absorb(self._sampler.drain())
        waiting = self._sampler.waiting
        if waiting is not None and time.monotonic() - self._probe_tried_s > PROBE_WAIT_S:
            raise waiting  # the command runs on in an image without the probe's file

    def _without_bpf(self, feed: EarlyFeed | None, error: BaseException) -> bool:
        """BPF did not load: go on with the early sampler if it runs, else raise."""
        if feed is None or not feed.running or not isinstance(error, BpftopError):
            raise error
        self.bpf_problem = str(error)
        self.counting_since = self.counting_since or time.monotonic()
        self._note = f"BPF failed: {error.message}"
        self._post(Phase.SAMPLING, self._note)
        return bool(self._loop(partial(self._absorb_early, feed, bpf_coming=False)))

    def _finish(self, exited: bool) -> None:
        """Collection is over; once the target exited, keep answering requests."""
        if exited:
            self._close_sampler()
            self.finished.set()
            self._serve_after_exit()

    def _close_sampler(self) -> None:
        """Close the BPF sampler, unless a compile still runs (it closes then)."""
        if self._loading is None or not self._loading.abandon():
            self._sampler.close()

    def _loop(self, tick: Callable[[], None], loading: BackgroundLoad | None = None) -> bool | None:
        """Tick until stopped (False), the target exits (True) or ``loading`` is
        done (None: it wakes us); while loading, the first tick comes early."""
        first_s = FIRST_TICK_S if loading is not None else self.interval_s
        deadline = time.monotonic() + min(first_s, self.interval_s)
        while True:
            woken = self._wake.wait(max(0.0, deadline - time.monotonic()))
            if self._stop.is_set():
                break
            if loading is not None and loading.done.is_set():
                return None
            if woken:
                self._wake.clear()  # a request: answer now, keep the tick rhythm
            else:
                deadline = next_deadline(deadline, self.interval_s, time.monotonic())
            self._apply_requests()
            tick()
            if self._process.exited() and not self._followed.alive():
                tick()  # what came in while the last tick was absorbed (forks too)
                if self._process.exited() and not self._followed.alive():
                    self._post(Phase.EXITED, f"process {self.pid} exited")
                    return True
            self._post(Phase.SAMPLING, self._note)
        tick()  # what came in since the last tick
        self._post(Phase.EXITED if self._process.gone else Phase.SAMPLING, self._note)
        return False

    def _serve_after_exit(self) -> None:
        """The target is gone: keep re-slicing what was collected on request."""
        while True:
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            self._apply_requests()
            self._post(Phase.EXITED, f"process {self.pid} exited")

    @property
    def _bpf_ready(self) -> bool:
        """BPF is loaded and its load is over (mid-load, the sampler must not be touched)."""
        return self._sampler.loaded and (self._loading is None or self._loading.succeeded)

    @property
    def _profile(self) -> TimedProfile:
        return self._probes.active.profile

    _stats = property(lambda self: self._probes.active.counters)  # a CollectionCounters

    def _apply_requests(self) -> None:
        requested = self._probe_request.take()
        if requested is not None and self._bpf_ready:
            self._switch_probe(requested)
        if self._commands.apply(self._profile).reset:
            self._probes.reset_counters()  # counts start again from now
        self._stacks.show_source_lines(self.source_lines)
        self._stacks.use_short_names(self.short_names)

    def _switch_probe(self, text: str) -> None:
        """Attach ``text``'s probe instead of the current one, or say why not."""
        try:
            spec = parse_spec(text)
            if str(spec) == self._sampler.probe:
                self._probe_message = f"{spec} is already the probe"
                return
            last = self._sampler.switch(spec)
        except BpftopError as err:
            self._probe_message = f"probe not changed: {err}"
            return
        self._absorb(last)  # the old probe's last counts, into its own profile
        self._probes.use(str(spec), spec.weighted)
        self._probe_message = f"probe {spec}"

    def _resume_held(self) -> None:
        """Let the launched command, held at an exec and described, run on; held
        again at its next exec (``chroot DIR python3``, ``env``, ``nice``: the
        program that matters is often the second image), so each image is
        described, Python frames and all, before its first instruction."""
        assert self._launched is not None
        self._sampler.forget_blocked(self.pid)  # the hold is ours, not the command's wait
        self._sampler.hold_at_exec(self.pid)
        self._sampler.watch_loader(self.pid)  # stopped again once its libraries are mapped
        resume(self._launched)
        # Read while held, before its loader ran, the image lacks its libraries:
        # read again as they are mapped (a 50 ms image's libc frames went unnamed).
        self._images.exec_seen(self.pid)

    def _await_python_start(self, tgid: int) -> None:
        """A launched interpreter was just let go: describe it again as soon as
        it has made its thread-state key (milliseconds; until then a blocked
        thread's Python frames cannot be found), PYTHON_START_WAIT_S at most."""
        if self._stacks.python.runtime(tgid) is None:
            return  # no interpreter (yet): the next ticks look
        deadline = time.monotonic() + PYTHON_START_WAIT_S
        while time.monotonic() < deadline:
            time.sleep(0.005)
            if self._stacks.python.refresh(tgid):
                self._python_next.discard(tgid)
                return

    def _follow_probe(self) -> None:
        """The launched command is held at an exec: a probe named by library
        goes on the new image's files (what the old one counted last is taken
        at the next tick); a probe not attached yet is, if found there."""
        waiting = self._sampler.waiting is not None
        self._probe_tried_s = time.monotonic()
        try:
            last = self._sampler.follow_exec()
        except BpftopError as err:
            where = "is not attached yet" if waiting else "stays on the first image"
            self._probe_message = f"{self._sampler.probe} {where}: {err}"
            return
        if waiting:
            self._probe_message = f"probe {self._sampler.probe} attached at the command's exec"
        if last is not None:
            self._followed_ticks.append(last)

    def _exec_seen(self, tgid: int) -> None:
        """(The unwind feed's exec thread) the launched command exec'd again and
        is held: a tick now describes it and lets it go."""
        if tgid == self.pid:
            self._wake.set()

    def _reread(self, tgid: int) -> None:
        """A running image was read again after its exec: the walker's too."""
        if self._unwind_feed is not None:
            self._unwind_feed.refresh(tgid)

    def _image_of(self, tgid: int) -> int:
        """The image ``tgid`` runs (how many times it exec'd as a target), from BPF."""
        image_of = getattr(self._sampler, "image_of", None)
        return int(image_of(tgid)) if image_of is not None and self._bpf_ready else 0

    def _on_exec(self, tgid: int, python: bool = True) -> None:
        """A target exec'd: read its new image now, before it can exit (once
        gone, what was read at the exec, if anything, is kept); ``python``:
        its interpreter too."""
        if not has_maps(tgid):
            return
        unwind_feed.note_exec(self._unwind_feed, tgid)  # (waits for the tables of a held command)
        self._symbolizer.forget(tgid)
        image = self._image_of(tgid)  # (read before the maps: an exec after them is noticed)
        self._symbolizer.prepare(tgid, preload=True)
        # (before BPF counts images, the early feed tells them apart by itself)
        if self._bpf_ready and self._images.capture(tgid) and self._image_of(tgid) == image:
            self._symbolizer.note_image(tgid, image)
        self._labels.forget(tgid)
        if python:
            self._stacks.python.exec(tgid)
        if tgid == self.pid and isinstance(self._process, ProcessWatch):
            with contextlib.suppress(BpftopError):
                self._process = ProcessWatch(tgid, (), self._count_children)

    def _absorb_early(self, feed: EarlyFeed, bpf_coming: bool = True) -> None:
        """An early tick: none sampled after stop() nor after ``duration_s`` of
        samples that count (a -d of 0.2 s can end before the collector's first
        tick); ``bpf_coming`` False: BPF failed, these are the best samples there are."""
        since, duration = self.counting_since, self.duration_s
        until_ns = int((since + duration) * 1e9) if since and duration is not None else 0
        ends = [ns for ns in (self._stop_ns, until_ns) if ns]
        over = self._stop.is_set() or (self._process.exited() and not self._followed.alive())
        leave_out = self._early_left_out if bpf_coming else lambda _: ""
        self._absorb(*feed.tick(min(ends, default=0), leave_out, over, self._early_exec))

    def _early_exec(self, tgid: int) -> int | None:
        """(The early feed) ``tgid`` exec'd while perf_event sampled it: read its
        new image for names now. Its early samples of that image are named by
        the number returned, one of the early feed's own (negative: never one
        BPF counts), kept with the maps read; None: it is gone."""
        self._early_images -= 1
        image = self._early_images
        if tgid in self._targets or tgid == self.pid:
            self._on_exec(tgid)
        else:  # -a: its names only, as for a process seen for the first time
            self._symbolizer.forget(tgid)
            self._labels.forget(tgid)
        if self._symbolizer.prepare(tgid).maps is None:
            return None
        maps = read_image(tgid)  # kept: its stacks may be named again after its next exec
        if maps is not None:
            self._symbolizer.images.put(tgid, image, maps)
        self._symbolizer.note_image(tgid, image)
        return image

    def _early_left_out(self, tgid: int) -> str:
        """Why ``tgid``'s early samples cannot count: BPF gives a CPython
        process's stacks their Python frames, and perf_event samples have none."""
        return EARLY_NO_PYTHON if self._stacks.python.verified(tgid) else ""

    def _absorb(
        self, tick: RawTick, qualities: Qualities | None = None, left_out: Qualities | None = None
    ) -> None:
        while self._followed_ticks:
            self._absorb_one(self._followed_ticks.pop(0))
        self._absorb_one(tick, qualities, left_out)

    def _absorb_one(
        self, tick: RawTick, qualities: Qualities | None = None, left_out: Qualities | None = None
    ) -> None:
        again: set[int] = set()  # interpreters not started yet: looked for next tick too
        for tgid in tuple(self._reread_next):
            self._symbolizer.reread(tgid)
            if not self._stacks.python.refresh(tgid):
                again.add(tgid)
        for tgid in self._python_next - self._reread_next:
            if not self._stacks.python.refresh(tgid):
                again.add(tgid)
        self._reread_next.clear()
        self._python_tries.update(again)
        self._python_next = {t for t in again if self._python_tries[t] < PYTHON_TRIES}
        for tgid in tick.execs:
            if tgid == self.pid and self._exec_read_ahead:
                # Its maps are read again (the libraries it has loaded since),
                # but not its interpreter: the new image, running now, would
                # lose its Python frames while it is looked for anew.
                self._exec_read_ahead -= 1
                self._on_exec(tgid, python=False)
                # Its interpreter, in a library the loader maps after the exec
                # (a shared libpython), is looked for again next tick.
                self._python_next.add(tgid)
                continue
            self._on_exec(tgid)
            if tgid == self.pid and self._launched is not None and self._bpf_ready:
                self._follow_probe()
                self._resume_held()  # held at this exec: described now
                self._reread_next.add(tgid)  # read before its loader ran: again next tick
        for tgid in tick.loaded:  # stopped where its loader has mapped its libraries
            if tgid == self.pid and self._launched is not None and self._bpf_ready:
                self._on_exec(tgid, python=False)  # its libraries' maps and tables
                # (its interpreter has not run yet: looked for next tick)
                self._python_next.add(tgid)
                self._follow_probe()  # a probe by library: on the files it maps now
                self._resume_held()
                self._await_python_start(tgid)
        self._followed.note_forks(tick)
        unwind_feed.note_tick(self._unwind_feed, tick, qualities is None)
        self._stacks.python.note(tick)  # first: a process found Python names its threads
        self._threads.note(tick)
        active = self._probes.active
        for sample in tick.samples:
            tgid = sample.tgid
            label = self._process.name if tgid == self.pid else self._labels.name(tgid)
            active.add(label, self._stacks.lookup(sample), sample, self.headless)
        self._stacks.python.retire(tick)
        self._profile.end_tick(tick.interval_s)
        walker = getattr(self._sampler, "unwinder", None) is not None  # made BPF's user stacks
        self._stats.add(
            tick, bpf_qualities(tick, walker) if qualities is None else qualities, left_out
        )
        active.events += tick.total_samples

    def _post(self, phase: Phase, message: str = "") -> None:
        self._seq += 1
        profile = self._profile
        final = self._stop.is_set() or phase is Phase.EXITED
        current = profile.current if final or not self.headless else _UNREAD  # no copies
        facts = self._facts.read(self._sampler, self._bpf_ready, final, self.headless)
        snap = Snapshot(
            seq=self._seq,
            phase=phase,
            stats=self._stats.freeze(),
            process=self._process.info(),
            tree=current.tree(last=final and self.headless),  # record's: no copies
            hot=current.hot_functions(limit=500),
            hot_by_symbol=current.hot_functions(limit=500, by_symbol=True),
            message="; ".join(filter(None, (message, *self.python_notes))),
            unknown=unknown_shares(
                _shown_unknown(profile.unknown, self.headless, final), self._hints
            ),
            maps=facts.maps,  # (record reads only the last snapshot's)
            overhead=facts.overhead,
            time_mode=profile.label,
            threads=profile.thread_shares(self._threads.names),
            probes=self._probes.specs,
            weight_unit=self._probes.unit,
            probe_events=self._probes.active.events,
            events_tree=self._probes.events_tree() if final else None,
            probe_message=self._probe_message,
            unwind=facts.unwind,
            python=facts.python,
            bpf_problem=self.bpf_problem,
            bpf_loading=not self.bpf_problem and not self._bpf_ready,
            notices=self._notices,
        )
        self.last = snap
        self._on_snapshot(snap)


_UNREAD = Profile()  # the empty tree and table of headless ticks


def _shown_unknown(
    counts: dict[UnknownKey, int], headless: bool, final: bool
) -> dict[UnknownKey, int]:
    """The unknown-frame counts a snapshot reports: all for the live view; for
    record, only JIT code without a perf map, and only at the end (its one-line
    hint needs no package lookup; the others' would run dpkg)."""
    if not headless:
        return counts
    if not final:
        return {}
    return {k: n for k, n in counts.items() if k[0] is Unresolved.JIT_NO_PERF_MAP}
