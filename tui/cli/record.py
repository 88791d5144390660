"""``bpftop record``: sample without a screen, then write the profile to a file.

Owns :func:`run_record`. ``-d`` counts from the first sample, not from
launch; ``record -- COMMAND`` exits with the command's status (after writing);
the output path is checked before sampling starts, and the writers
(:mod:`bpftop.tui.cli.files`) load only once there is something to write.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from bpftop.base.errors import BpftopError
from bpftop.bpf.perf_events import PerfSampler
from bpftop.symbols.frame import Unresolved
from bpftop.symbols.hints import JIT_HINT
from bpftop.tui.cli.args import VERSION
from bpftop.tui.cli.empty_record import EmptyRun, empty_reason, seconds_since_launch
from bpftop.tui.cli.gc_tuning import tune_gc
from bpftop.tui.cli.output_path import check_writable
from bpftop.tui.cli.session import check, keep_stderr
from bpftop.tui.cli.shutdown import Shutdown, leave
from bpftop.tui.cli.uretprobe_risk import death_line, throw_warning
from bpftop.tui.collect.assemble import end_launched, make_collector
from bpftop.tui.collect.collector import Collector
from bpftop.tui.collect.options import Options, Recording
from bpftop.tui.formats.saved import snapshot_meta
from bpftop.tui.model.idle import snapshot_without_idle
from bpftop.tui.model.snapshot import Phase, Snapshot

IDLE_WAIT_S = 1.0  # record's main thread: the longest sleep once sampling runs


def run_record(options: Options, early: PerfSampler | None = None) -> int:
    """Record on ``options``, taking over ``early`` (perf_event sampling started
    before the imports) if any, then write the file; the exit code."""
    recording = options.recording
    assert recording is not None, "record's options carry its output"
    check_writable(recording.output)  # (main checked it before sampling; a -- COMMAND's run)
    sampler = check(options)
    if sampler is None:
        return 0
    keep_stderr()
    done = threading.Event()
    shutdown = Shutdown(done.set, keep_first=True)  # the first signal: stop, write the file
    shutdown.cut_message = (
        f"bpftop: stopped again before {recording.output} was written: not written"
    )
    shutdown.install()  # before a command is started held: it is never left stopped
    risk = throw_warning(options.probe, options.command, tuple(options.pids))
    if risk:  # before attaching: the probe may kill the target
        print(f"bpftop: warning: {risk}", file=sys.stderr)
    collector = make_collector(options, sampler, early)
    shutdown.launched = collector.launched
    collector.headless = True  # the file is written from the last snapshot only
    tune_gc()
    errors: list[BpftopError] = []
    exited_at: list[float] = []  # when the collector saw the targets gone (s since launch)
    collector.duration_s = recording.duration_s  # -d may end before the first tick
    started_ns = _sample(collector, recording.duration_s, done, errors, exited_at)
    code = command_code(collector.launched)  # before bpftop ends it
    collector.stop(wait=False)  # the file first; a compile still running: see leave
    end_launched(collector)
    shutdown.writing(str(recording.output))
    try:
        _write(options, recording, collector, errors, exited_at, started_ns, early is not None)
    except BaseException:
        collector.stop()  # waits for a compile still running (BCC's exit hooks, below)
        raise
    if collector.compiling:  # (a 1 s record of the early sampler's samples exited at
        leave(code)  # 3.2 s, after the compile, when it waited for it: bench.startup)
    collector.stop()  # joins the compile's thread (it may have ended just now)
    return code


def command_code(launched: subprocess.Popen[bytes] | None) -> int:
    """``record -- COMMAND``'s exit code, as perf's: the command's own status when
    it ended by itself (128 + N when a signal N ended it); 0 when it still runs
    (bpftop stopped first: -d, a signal) or there is no command."""
    status = launched.poll() if launched is not None else None
    if status is None:
        return 0
    return status if status >= 0 else 128 - status


def _write(
    options: Options,
    recording: Recording,
    collector: Collector,
    errors: list[BpftopError],
    exited_at: list[float],
    started_ns: int | None,
    early: bool,
) -> None:
    """Report what went wrong or was refused, then write the profile."""
    if errors:
        raise errors[0]
    if collector.bpf_problem:
        print(
            f"bpftop: warning: sampled with perf_event only: {collector.bpf_problem}",
            file=sys.stderr,
        )
    for note in collector.python_notes:
        print(f"bpftop: warning: {note}", file=sys.stderr)
    snap = collector.last
    assert snap is not None  # the collector posts before it does anything else
    end_ns = time.time_ns()
    meta = snapshot_meta(
        snap, frequency_hz=options.frequency,
        start_ns=end_ns if started_ns is None else started_ns, end_ns=end_ns, version=VERSION,
    )  # fmt: skip
    from bpftop.tui.cli.files import save_recording  # the writers load only when needed

    if not options.idle:
        snap, hidden, share = snapshot_without_idle(snap)
        if hidden:
            print(
                f"bpftop: left out {hidden} idle Python samples ({100 * share:.1f}% of the "
                "total: innermost frame a known wait, as py-spy does; --idle keeps them)",
                file=sys.stderr,
            )
    save_recording(snap, meta, recording.output, recording.output_format)
    jit = _jit_hint(snap)
    if jit:
        print(f"bpftop: {jit}", file=sys.stderr)
    launched = collector.launched is not None
    died = death_line(options.probe, command_code(collector.launched)) if launched else ""
    if died:  # the target's death, not "never fired"
        print(f"bpftop: warning: {died}", file=sys.stderr)
    elif snap.stats.total_samples == 0:
        reason = _empty_reason(options, snap, exited_at, early=early, launched=launched)
        print(f"bpftop: warning: {reason}", file=sys.stderr)
    elif exited_at and options.pids and not launched:
        print(  # py-spy says it too; a command's exit is its record's normal end
            f"bpftop: process {options.pids[0]} exited {exited_at[0]:.1f} s after launch: "
            "the recording ends there",
            file=sys.stderr,
        )


JIT_REASON = Unresolved.JIT_NO_PERF_MAP.value


def _jit_hint(snap: Snapshot) -> str:
    """One line when samples ran JIT code that no perf map names ("" if none)."""
    total = snap.stats.total_samples
    jit = sum(u.samples for u in snap.unknown if u.reason.startswith(JIT_REASON))
    if not jit or not total:
        return ""
    return f"{100 * jit / total:.1f}% of the samples are in {JIT_HINT}"


def _empty_reason(
    options: Options, snap: Snapshot, exited_at: list[float], *, early: bool, launched: bool
) -> str:
    """Why ``snap`` holds no samples (see empty_record)."""
    pids = options.pids
    if options.all_processes:
        targets = "any process"
    elif len(pids) > 1:
        targets = "processes " + ", ".join(map(str, pids))
    elif snap.process is not None:
        targets = f"process {snap.process.pid} ({snap.process.name})"
    else:
        targets = "the target"
    run = EmptyRun(
        probe=snap.stats.probe,
        targets=targets,
        exited=snap.phase is Phase.EXITED,
        early=early,
        after_s=exited_at[0] if exited_at else seconds_since_launch(),
        launched=launched,
    )
    return empty_reason(run)


def _sample(
    collector: Collector,
    duration_s: float | None,
    done: threading.Event,
    errors: list[BpftopError],
    exited_at: list[float],
) -> int | None:
    """Start ``collector`` and wait until ``done`` is set, collection ends, or
    ``duration_s`` of sampling have passed; when sampling began (wall-clock
    ns), None if it never did. Errors are appended to ``errors``, and when the
    targets were seen gone (seconds since launch) to ``exited_at``. Sampling
    begins when the samples that count do (``collector.counting_since``): the
    early sampler's start, or BPF's when every early sample is left out (a
    Python target's have no Python frames)."""

    def on_snapshot(snap: Snapshot) -> None:
        if snap.phase is Phase.EXITED and not exited_at:
            exited_at.append(seconds_since_launch())
            done.set()

    def on_error(error: BpftopError) -> None:
        errors.append(error)
        done.set()

    collector.start(on_snapshot, on_error=on_error)
    while not done.is_set() and not collector.finished.is_set():
        since = collector.counting_since
        recorded_s = time.monotonic() - since if since is not None else 0.0
        if duration_s is not None and recorded_s >= duration_s:
            break
        done.wait(_wait_s(duration_s, recorded_s, since is not None))
    since = collector.counting_since
    return None if since is None else time.time_ns() - int((time.monotonic() - since) * 1e9)


def _wait_s(duration_s: float | None, recorded_s: float, sampling: bool) -> float:
    """How long the main thread sleeps before it looks again. Until sampling
    starts, 50 ms (the start is seen in a snapshot: -d counts from it); then the
    time -d leaves, at most ``IDLE_WAIT_S`` (an exit or error wakes it at once,
    through ``done``). Looking every 50 ms throughout cost ~0.1% of a core."""
    if not sampling:
        return 0.05
    left = IDLE_WAIT_S if duration_s is None else duration_s - recorded_s
    return max(0.0, min(left, IDLE_WAIT_S))
