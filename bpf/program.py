"""The compiled BPF program and every kernel resource it owns.

:class:`CpuSampler` compiles ``bpftop.bpf.c`` once (handlers for every probe
kind), attaches the active probe (a cpu-clock perf event on every CPU by
default; filtered in the kernel to the target tgids) and the
``sched_process_exit`` tracepoint, and drains the maps into a :class:`RawTick`
each tick. ``switch()`` changes the probe by attach/detach only.
``close()`` (or leaving the ``with`` block) detaches everything.
"""

from __future__ import annotations

import contextlib
import ctypes as ct
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from bpftop.base.errors import BpfLoadError
from bpftop.bpf.attach import COMPILED_HANDLERS, Attachment
from bpftop.bpf.capture import capture_stderr
from bpftop.bpf.compiler_pages import release_compiler_pages
from bpftop.bpf.environment import (
    HeaderChoice,
    choose_headers,
    ensure_tracefs,
    import_bcc,
    kernel_source,
)
from bpftop.bpf.kallsyms_stub import kallsyms_stub
from bpftop.bpf.libbcc import LIBBCC_LOCK
from bpftop.bpf.loader_watch import LoaderWatch
from bpftop.bpf.map_usage import map_usage
from bpftop.bpf.maps_io import MapDrains, StackReader, clear_stacks
from bpftop.bpf.probe_copies import ProbeCopies
from bpftop.bpf.probe_stacks import clear_weighted, walked_share, weighted_samples
from bpftop.bpf.probes import ProbeKind, ProbeSpec, ProbeSpecError
from bpftop.bpf.program_image import ImageCache, ProgramImage, compile_image, image_key, instantiate
from bpftop.bpf.program_text import (
    PROGRAM_FILE,
    calls_python,
    calls_walker,
    compiler_flags,
    load_error,
    source_text,
)
from bpftop.bpf.python_walk import PythonCounts, PythonWalker
from bpftop.bpf.raw import MapUsage, RawTick
from bpftop.bpf.resolve import USER_ATTACH, Plan, resolve, site_files
from bpftop.bpf.retarget import load_slot_copies
from bpftop.bpf.settle import wait_for_handlers
from bpftop.bpf.stats import (
    ProgStats,
    disable_run_stats,
    enable_run_stats,
    missed_runs,
    prog_stats,
)
from bpftop.bpf.target_events import TargetEvents
from bpftop.bpf.unwinder import MODES, Unwinder, UnwindState

CONTROL_STATE, CONTROL_ALL_PROCESSES, CONTROL_OFFCPU_MIN_US, CONTROL_OFFCPU_SLOT = 0, 1, 2, 3
CONTROL_FOLLOW_CHILDREN, CONTROL_HOLD_AT_EXEC, CONTROL_ENTRY_PROBES = 4, 5, 6
CONTROL_GIL_ONLY = 7
EPOCH_MASK = (1 << 30) - 1


class CpuSampler:
    """CPU sampling of the target processes with in-kernel aggregation."""

    def __init__(
        self,
        sample_hz: int = 99,
        *,
        probe: ProbeSpec | None = None,
        system_wide: bool = False,
        follow_children: bool = False,
        gil_only: bool = False,
        counts_size: int = 65536,
        stack_storage_size: int = 32768,
        wstack_storage_size: int = 16384,
        targets_size: int = 1024,
        source: Path = PROGRAM_FILE,
        unwind: str = "fp",
        unwind_rows: int = 1 << 20,
        copies_ahead: bool = False,
    ) -> None:
        """``probe``: what to attach first (default: profile:hz:``sample_hz``);
        ``system_wide``: every process is a target (-a); ``follow_children``:
        a target's forked children become targets (--children); ``gil_only``:
        no samples of CPython threads that do not hold the GIL (--gil); ``copies_ahead``:
        the walkers' probe copies are verified on a thread from the compile on (probe_copies)."""
        if unwind not in MODES:
            raise ValueError(f"unwind mode {unwind!r} is not one of {sorted(MODES)}")
        self.unwind = unwind
        self.unwinder: Unwinder | None = None  # the .eh_frame walker, once loaded
        self.python: PythonWalker | None = None  # the Python frame walker, once loaded
        self._copies: ProbeCopies | None = None  # the walkers' copies for probes, once loaded
        self.copies_ahead = copies_ahead
        self.spec = probe or ProbeSpec(ProbeKind.PROFILE, number=sample_hz)
        self.system_wide = system_wide
        self.follow_children = follow_children
        self.gil_only = gil_only
        self.defines = {
            "COUNTS_SIZE": counts_size,
            "STACK_STORAGE_SIZE": stack_storage_size,
            "WSTACK_STORAGE_SIZE": wstack_storage_size,
            "TARGETS_SIZE": targets_size,
        }
        if unwind == "fp":
            self.defines["NO_WALKER"] = 1  # the walker is not appended (see _source_text)
        else:
            self.defines["UNWIND_ROWS_SIZE"] = unwind_rows
        self._pids: tuple[int, ...] = ()
        self._attachment: Attachment | None = None
        # Why the probe is not attached yet (start(until_exec=True)); follow_exec tries again.
        self.waiting: ProbeSpecError | None = None
        self._retired: list[Attachment] = []  # muted, detached at the next drain
        self._epoch = 0  # one more per switch; its low bit is the active handler slot
        self._gen_slot = [0, 0]  # the slot whose probe filled each generation
        self.source = source
        self.header_note = ""
        self.compiled = False  # whether the last load() compiled (no image on disk)
        self._image_lookup: tuple[ImageCache, str, ProgramImage | None] | None = None
        self._bpf: Any = None
        self._drains: MapDrains | None = None  # made at the first drain
        self._loaders: LoaderWatch | None = None  # made when a held command first execs
        self._stats_fd: int | None = None
        self._drained: dict[str, int] = {}
        self._gen = 0
        self._events: TargetEvents | None = None  # made at load
        self._dropped_seen = 0
        self._last_drain = time.monotonic()

    @property
    def probe(self) -> str:
        return str(self.spec)

    @property
    def loaded(self) -> bool:
        """True from a successful load() until close()."""
        return self._bpf is not None

    @property
    def generation(self) -> int:
        """The generation (0/1) of maps the kernel is filling right now."""
        return self._gen

    def program_text(self) -> str:
        """The final program as BCC compiles it (``--print-bpf``)."""
        defines = "".join(f"#define {k} {v}\n" for k, v in self.defines.items())
        return f"/* -D flags */\n{defines}\n{source_text(self.source, self.unwind)}"

    def compile_inputs(self) -> tuple[str, list[str]]:
        """The program text and the compiler flags BCC is given (``bench/compile_bench.py``)."""
        return source_text(self.source, self.unwind), compiler_flags(self.defines)

    def _find_image(self) -> tuple[ImageCache, str, ProgramImage | None]:
        """(the image cache, this program's key there, its image if kept); read once."""
        if self._image_lookup is None:
            text, cflags = self.compile_inputs()
            cache = ImageCache.default()
            key = image_key(text.encode(), cflags, str(choose_headers().path))
            self._image_lookup = (cache, key, cache.read(key))
        return self._image_lookup

    def load(self) -> None:
        """Load the program from its image on disk (bpf/program_image.py), or
        compile it first (~0.6-1.2 CPU-s: bench/compile_bench.py) and keep the
        image for the next launch; raises BpfLoadError."""
        bcc = import_bcc()
        headers = choose_headers()
        self.header_note = headers.note
        ensure_tracefs()
        cache, key, image = self._find_image()
        self._image_lookup = None  # a later load() looks again
        self.compiled = image is None
        if image is not None:
            try:
                self._load_image(bcc, image)
                return
            except BpfLoadError:  # the kernel changed under the key: compile afresh
                cache.remove(key)
                self.compiled = True
        image = self._compile(*self.compile_inputs(), headers)
        self._load_image(bcc, image)
        cache.write(key, image)

    def _compile(self, text: str, cflags: list[str], headers: HeaderChoice) -> ProgramImage:
        with LIBBCC_LOCK, kernel_source(headers), capture_stderr() as log:
            try:
                with kallsyms_stub():  # BCC's own read of every kernel symbol, spared
                    image = compile_image(text.encode(), cflags)
            except Exception as exc:
                failure: Exception | None = exc
            else:
                failure = None
        if failure is not None:  # the log is complete only once capturing ends
            raise load_error(failure, log.text)
        release_compiler_pages()  # no LLVM code runs again until another compile
        return image

    def _load_image(self, bcc: Any, image: ProgramImage) -> None:
        failure: Exception | None = None
        with LIBBCC_LOCK, capture_stderr() as log:
            try:
                # TRACEPOINT_PROBE(sched, sched_switch) is offcpu's: attached by it only
                # (attached and detached at once, it cost every load ~70 ms of RCU wait).
                self._bpf = instantiate(image, bcc, detached=(b"sched:sched_switch",))
                source = self.source.read_text()  # which walkers the program calls:
                walker, python = self.unwind != "fp" and calls_walker(source), calls_python(source)
                self._copies = ProbeCopies(self._bpf, bcc.BPF, walker, python, self.copies_ahead)
                # Load every handler now, so the verifier speaks while its log
                # is being captured (BCC would load them at attach time).
                self._load_handlers(bcc)
                if walker:
                    self.unwinder = Unwinder(self._bpf, bcc.BPF.PERF_EVENT, self.unwind)
                if python:
                    self.python = PythonWalker(self._bpf, bcc.BPF.PERF_EVENT)
                self._events = TargetEvents(self._bpf)
            except Exception as exc:
                failure = exc
        if failure is not None:  # the log is complete only once capturing ends
            self.close()
            raise load_error(failure, log.text)
        self._stats_fd = enable_run_stats()

    def _load_handlers(self, bcc: Any) -> None:
        """Load (verify) every handler now, so attaching later never compiles."""
        bpf = self._bpf
        for name, kind in COMPILED_HANDLERS:
            bpf.load_func(name, getattr(bcc.BPF, kind))
        load_slot_copies(bpf, bcc.BPF, COMPILED_HANDLERS)
        control = self._bpf[b"control"]
        control[ct.c_int(CONTROL_ALL_PROCESSES)] = ct.c_uint32(int(self.system_wide))
        control[ct.c_int(CONTROL_FOLLOW_CHILDREN)] = ct.c_uint32(int(self.follow_children))
        control[ct.c_int(CONTROL_GIL_ONLY)] = ct.c_uint32(int(self.gil_only))

    def set_targets(self, pids: Iterable[int]) -> None:
        self._pids = tuple(pids)
        targets = self._bpf[b"targets"]
        targets.clear()
        for pid in self._pids:
            targets[ct.c_uint32(pid)] = ct.c_uint8(1)

    def hold_at_exec(self, pid: int) -> None:
        """Make target ``pid`` stop (SIGSTOP) right after its next exec, and
        again once its loader has mapped its libraries (see :meth:`watch_loader`)."""
        self._bpf[b"control"][ct.c_int(CONTROL_HOLD_AT_EXEC)] = ct.c_uint32(pid)

    def watch_loader(self, pid: int) -> bool:
        """Let the loader of held target ``pid`` stop it once the libraries are
        mapped (an exec event then says so); False if that loader cannot be watched."""
        if self._loaders is None:
            self._loaders = LoaderWatch(self._bpf)
        return self._loaders.watch(pid)

    def image_of(self, tgid: int) -> int:
        """Which image of ``tgid`` runs: how many times it has exec'd while a
        target (what its counts carry as ``image``; 0: never)."""
        if self._bpf is None:
            return 0
        try:
            return int(self._bpf[b"exec_counts"][ct.c_uint32(tgid)].value)
        except KeyError:
            return 0

    def forget_blocked(self, tid: int) -> None:
        """Thread ``tid``'s block in progress is not counted (offcpu): a command
        bpftop holds at its exec is stopped by bpftop, not waiting on its own."""
        with contextlib.suppress(KeyError):
            del self._bpf[b"blocked"][ct.c_uint32(tid)]

    def remove_target(self, pid: int) -> None:
        """Stop counting ``pid`` (a thread that --children added as a process)."""
        self._pids = tuple(p for p in self._pids if p != pid)
        with contextlib.suppress(KeyError):
            del self._bpf[b"targets"][ct.c_uint32(pid)]
        if self.python is not None:  # the kernel gave a forked thread its process's entry
            self.python.forget(pid)

    @property
    def any_process(self) -> bool:
        """Probes go on every process (filtered in the kernel), not per pid."""
        return self.system_wide or self.follow_children

    def start(self, until_exec: bool = False) -> None:
        """Attach the probe given at construction (raises ProbeSpecError).

        ``until_exec`` (a command held before its first exec): a uprobe or
        USDT probe whose file is not found yet is left ``waiting`` for
        :meth:`follow_exec` (``chroot DIR prog``: DIR's files, named as prog
        sees them, are there only once it has exec'd)."""
        try:
            plan = resolve(self.spec, self._pids, self.any_process)
        except ProbeSpecError as err:
            if not until_exec or self.spec.rule.attach not in USER_ATTACH:
                raise
            self.waiting = err
        else:
            self._attachment = self._attach(plan, self._epoch & 1)
        self._write_state()
        self._last_drain = time.monotonic()

    def follow_exec(self) -> RawTick | None:
        """A target exec'd: a uprobe or USDT probe whose TARGET is a name
        (``uprobe:c:malloc``) goes on the files the new image maps when they
        are not those it is on (``chroot DIR prog``: the root's libc, not the
        host's); returns what the old one counted last, or None (unchanged).
        A ``waiting`` probe, a path's or a name's, is attached if found now.
        Raises ProbeSpecError when the new image has no such file or symbol."""
        old = self._attachment
        spec = self.spec
        if self.waiting is not None:
            plan = resolve(spec, self._pids, self.any_process)
            self._attachment, self.waiting = self._attach(plan, self._epoch & 1), None
            return None
        if old is None or spec.rule.attach not in USER_ATTACH or "/" in spec.target:
            return None
        plan = resolve(spec, self._pids, self.any_process)
        if site_files(plan.sites) == old.files:
            return None
        return self.switch(spec)

    def switch(self, spec: ProbeSpec) -> RawTick:
        """Make ``spec`` the active probe; returns what the old one counted last.

        The new spec is resolved first: one that cannot be used raises
        ProbeSpecError and leaves the running probe untouched. No compile:
        the new probe is attached to the idle handler slot, then one map
        write makes it count and mutes the old one; the old one's counts are
        drained now and its probes detached at the next drain (detaching
        waits for the kernel's RCU, ~100 ms a uprobe). A probe that overlaps
        the old one (same perf event, tracepoint or address) is attached
        only after the old one is detached.
        """
        plan = resolve(spec, self._pids, self.any_process)
        slot = (self._epoch + 1) & 1
        self._detach_retired(lambda a: a.slot == slot or a.conflicts(plan))
        old = self._attachment
        if old is not None and old.conflicts(plan):
            old.detach()
        try:
            new = self._attach(plan, slot)
        except Exception:
            if old is not None and not old.attached:
                self._attachment = self._attach(old.plan, self._epoch & 1)
            raise
        self._epoch = (self._epoch + 1) & EPOCH_MASK
        tick = self.drain()  # flips generation and slot in one write
        if old is not None:
            self._retired.append(old)
        self._attachment, self.spec, self.waiting = new, spec, None
        return tick

    def _attach(self, plan: Plan, slot: int) -> Attachment:
        if self._copies is not None:  # the walkers' copies this kind's handlers tail-call
            with contextlib.suppress(Exception):  # refused: its stacks say the walker did not start
                self._copies.ensure(plan.spec.rule.program, plan.spec.rule.python)
        if plan.spec.kind is ProbeKind.OFFCPU:
            control = self._bpf[b"control"]
            control[ct.c_int(CONTROL_OFFCPU_MIN_US)] = ct.c_uint32(plan.spec.number)
            control[ct.c_int(CONTROL_OFFCPU_SLOT)] = ct.c_uint32(slot)
        if plan.spec.kind in (ProbeKind.UPROBE, ProbeKind.USDT):  # they share on_probe_hit
            _set_bit(
                self._bpf[b"control"],
                CONTROL_ENTRY_PROBES,
                slot,
                plan.spec.kind is ProbeKind.UPROBE,
            )
        return Attachment(self._bpf, plan, slot)

    def _detach_retired(self, which: Callable[[Attachment], bool] = lambda _: True) -> None:
        """Detach muted probes (``which`` of them) and empty their slot's weighted stacks."""
        for old in [a for a in self._retired if which(a)]:
            old.detach()
            clear_weighted(self._bpf, old.slot, self.unwinder is not None, self.python)
            self._retired.remove(old)

    def _write_state(self) -> None:
        state = self._gen | (self._epoch << 1)
        self._bpf[b"control"][ct.c_int(CONTROL_STATE)] = ct.c_uint32(state)

    def drain(self) -> RawTick:
        """Take everything counted since the last drain, exactly once."""
        self._detach_retired()
        old = self._gen
        self._gen ^= 1
        self._gen_slot[self._gen] = self._epoch & 1
        self._write_state()
        wait_for_handlers()  # none still writes the old generation
        drains = self._drains = self._drains or MapDrains(self._bpf)
        walked = self.unwinder.take_stacks(old) if self.unwinder else {}
        python = self.python.take_stacks(old) if self.python else {}
        stacks = StackReader(self._bpf[f"stacks{old}".encode()], walked, python)
        entries = drains.entries(f"counts{old}")
        samples = tuple(stacks.sample(key, value) for key, value in entries)
        wsamples, weighted = weighted_samples(
            self._bpf, drains, old, self._gen_slot[old], self.unwinder is not None, self.python
        )
        samples += wsamples
        walked_samples = walked_share((k.user_stack_id, n) for k, n in entries)
        walked_samples += walked_share((k.user_stack_id, v.count) for k, v in weighted)
        self._drained.update({
            f"counts{old}": len(entries), f"stacks{old}": stacks.distinct,
            f"wcounts{old}": len(weighted), f"ustacks{old}": len(walked),
            f"pystacks{old}": len(python),
        })  # fmt: skip
        clear_stacks(self._bpf[f"stacks{old}".encode()])
        self._bpf.perf_buffer_poll(timeout=0)
        assert self._events is not None  # loaded
        events, now = self._events.take(), time.monotonic()
        tick = RawTick(
            samples=samples, exits=events.exits, execs=events.execs, loaded=events.loaded,
            forks=events.forks,
            fork_parents=events.fork_parents, lost_events=events.lost,
            dropped_samples=self._take_dropped(), interval_s=now - self._last_drain,
            walked_samples=walked_samples,
        )  # fmt: skip
        self._last_drain = now
        return tick

    def first_sample_ns(self) -> dict[int, int]:
        """CPU -> CLOCK_MONOTONIC ns of the first perf-event sample there (0: none
        yet); empty for a program without the ``first_ns`` map."""
        try:
            table = self._bpf[b"first_ns"]
        except KeyError:
            return {}
        return {cpu: int(ns) for cpu, ns in enumerate(table.getvalue(ct.c_int(0)))}

    def entries(self, map_name: str) -> int:
        """Entries in one map right now (walks the map: for tests and diagnostics)."""
        return sum(1 for _ in self._bpf[map_name.encode()])

    def map_usage(self) -> tuple[MapUsage, ...]:
        """Every map of the loaded program (see ``map_usage.ALL_MAPS``)."""
        return map_usage(self._bpf, self._drained, self.unwind_state(), self.entries)

    def unwind_state(self) -> UnwindState | None:
        """The .eh_frame walker's tables and what it could not take (None: no walker)."""
        return self.unwinder.state() if self.unwinder is not None else None

    def python_counts(self) -> PythonCounts | None:
        """What the Python walker did since load (None: no Python walker)."""
        return self.python.counts() if self.python is not None else None

    def prog_stats(self) -> ProgStats:
        """Cumulative run time and runs of all our programs (needs run stats on)."""
        total = ProgStats()
        for fn in list(self._bpf.funcs.values()):  # the copies' thread may add one
            total += prog_stats(fn.fd)
        return total

    def close(self) -> None:
        """Detach every probe and free the program; safe to call twice."""
        if self._copies is not None:  # none is being verified while the program goes
            self._copies.stop()
        if self.unwinder is not None:
            self.unwinder.close()
            self.unwinder = None
        self.python = None
        if self._bpf is not None:
            bpf, self._bpf = self._bpf, None
            self._drains = self._events = None  # BCC's cleanup closes their tables
            self._attachment = None
            self._retired.clear()
            with LIBBCC_LOCK, capture_stderr():  # what libbcc says while it detaches: not ours
                bpf.cleanup()
        disable_run_stats(self._stats_fd)
        self._stats_fd = None

    def __enter__(self) -> CpuSampler:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _take_dropped(self) -> int:
        """Samples the kernel saw but could not count: the counts map was full, or
        it skipped a sample handler (another BPF program had that CPU)."""
        total = int(self._bpf[b"drops"].sum(ct.c_int(0)).value)
        funcs = list(self._bpf.funcs.items())  # the copies' thread may add one meanwhile
        total += sum(missed_runs(f.fd) for n, f in funcs if n not in _NOT_SAMPLES)
        delta, self._dropped_seen = total - self._dropped_seen, total
        return delta


_NOT_SAMPLES = {  # handlers that report events, not samples
    b"tracepoint__sched__sched_process_exec",
    b"tracepoint__sched__sched_process_fork",
    b"tracepoint__sched__sched_process_exit",
}


def _set_bit(control: Any, index: int, bit: int, on: bool) -> None:
    old = int(control[ct.c_int(index)].value)
    control[ct.c_int(index)] = ct.c_uint32(old | (1 << bit) if on else old & ~(1 << bit))
