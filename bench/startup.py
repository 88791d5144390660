"""Start-up and footprint of ``bpftop record`` against ``perf record``, in the same run.

The target is tests/workloads/startup: 4096 distinct functions run in turn,
each until its own CLOCK_MONOTONIC deadline (15 ms apart by default: a 61 s
pass), and the workload writes the time it started. The earliest function in
a profile therefore dates the profile's first sample (checked once against
``perf record -k CLOCK_MONOTONIC``'s own timestamps: same function). Each run alternates the tools
(bpftop first on odd runs, perf first on even ones); the table shows medians.

  attach   the workload runs; then, at launch time T0, ``bpftop record -p PID
           -d 1`` or ``perf record -g -p PID -- sleep 1`` (bpftop's -d counts
           from its first sample; perf's sleep from launch, after it attached).
           Launch -> first sample (earliest function's time - T0); launch ->
           exit, the file written (and for perf, + ``perf script``: symbolized
           text, which bpftop's file already is); the command's CPU until the
           first sample (/proc/PID/stat, 10 ms ticks, polled every 10 ms) and
           in all (wait4); peak RSS (wait4's ru_maxrss).
  command  ``bpftop record -- startup -x 3`` / ``perf record -g -- startup -x 3``,
           until it exits: launch -> first sample (the workload starts only
           when the tool lets it), launch -> file, and the share of samples
           whose stack names the workload's function (not [unknown]).
  short    a workload that exits LIFE s (1.5) after the tool's launch, recorded
           with ``-p PID`` until it exits: the samples each tool got, bpftop's
           over perf's in each run (the two run back to back), and the samples
           against the target's own CPU time while the tool ran x Hz (wait4
           minus /proc/PID/stat at launch). ``--hogs N`` runs N busy loops
           beside it (a loaded machine).
  steady   a long-running workload: CPU of the tool (schedstat, all threads)
           over STEADY s (10), from SETTLE s (5) after it opened its perf events.

    sudo .venv/bin/python -m bench.startup [--runs 3] [--hz 99] [--only attach short]
    sudo .venv/bin/python -m bench.startup --runs 1          # quick look
    sudo .venv/bin/python -m bench.startup --only short --runs 5 [--hogs 2] [--bpftop PATH]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.bytecode import compile_bpftop
from bench.startup_watch import (
    PERF,
    STARTUP,
    Clock,
    Profile,
    Watched,
    process_cpu_s,
    read_folded,
    read_perf,
    reap_cpu_s,
    sampling,
    spawn_workload,
    stop,
    threads_cpu_s,
    watch,
)
from tests.conftest import BPFTOP

SCENARIOS = ("attach", "command", "short", "steady")
TOOLS = ("bpftop", "perf")


@dataclass(frozen=True)
class Options:
    hz: int
    period_ms: float
    life_s: float
    command_s: float
    settle_s: float
    steady_s: float
    timeout_s: float
    work: Path
    bpftop: Path = BPFTOP
    hogs: int = 0


@dataclass(frozen=True)
class Outcome:
    """One tool's run of one scenario; None where it does not apply."""

    first_s: float | None = None  # launch -> first sample
    wall_s: float | None = None  # launch -> exit, file written
    script_s: float | None = None  # + perf script (perf only)
    cpu_first_s: float | None = None  # CPU until the first sample
    cpu_s: float | None = None  # CPU of the whole command
    rss_mib: float | None = None
    samples: int | None = None
    span_s: float | None = None  # first to last workload function sampled
    named_pct: float | None = None  # samples whose stack names a workload function
    steady_pct: float | None = None  # % of one core in steady state
    target_cpu_s: float | None = None  # the target's CPU while the tool ran (short)
    of_cpu_pct: float | None = None  # samples / (target_cpu_s x Hz)
    note: str = ""


def tool_argv(
    tool: str,
    target: Sequence[str],
    hz: int,
    out: Path,
    seconds: float | None,
    bpftop: Path = BPFTOP,
) -> list[str]:
    """``record`` for ``tool`` on ``target`` (["-p", PID] or ["--", CMD...])."""
    if tool == "bpftop":
        limit = ["-d", str(seconds)] if seconds is not None else []
        return [str(bpftop), "record", "-F", str(hz), "-o", str(out), *limit, *target]
    argv = [PERF, "record", "-q", "-F", str(hz), "-g", "-o", str(out), *target]
    return [*argv, "--", "sleep", str(seconds)] if seconds is not None else argv


def _paths(tool: str, opts: Options) -> tuple[Path, Path, Path]:
    """(output, start file, stderr) for one run, cleared."""
    out = opts.work / ("out.folded" if tool == "bpftop" else "perf.data")
    paths = (out, opts.work / "start", opts.work / f"{tool}.err")
    for path in paths:
        path.unlink(missing_ok=True)
    return paths


def _read(tool: str, out: Path) -> tuple[Profile, float | None]:
    if tool == "bpftop":
        return read_folded(out), None
    return read_perf(out)


def _outcome(w: Watched, clock: Clock | None, profile: Profile, script_s: float | None) -> Outcome:
    first_at = None
    if clock is not None and profile.earliest is not None:
        first_at = clock.middle_of(profile.earliest)
    wall = w.ended_s - w.launched_s
    return Outcome(
        first_s=None if first_at is None else first_at - w.launched_s,
        wall_s=wall,
        script_s=wall + (script_s or 0.0),  # bpftop's folded file is symbolized text already
        cpu_first_s=None if first_at is None else w.cpu_at(first_at),
        cpu_s=w.cpu_s,
        rss_mib=w.peak_rss_kib / 1024,
        samples=profile.samples,
        span_s=_span(profile, clock),
        named_pct=100 * profile.named / profile.samples if profile.samples else None,
        note=_note(w, profile, clock),
    )


def _span(profile: Profile, clock: Clock | None) -> float | None:
    if clock is None or profile.earliest is None or profile.latest is None:
        return None
    return (profile.latest - profile.earliest + 1) * clock.period_s


def _note(w: Watched, profile: Profile, clock: Clock | None) -> str:
    if w.status != 0:
        return f"exit {w.status}: {w.stderr[-160:]!r}"
    if profile.earliest is None and clock is not None:
        pass_s = clock.count * clock.period_s
        return f"no workload function sampled (later than its {pass_s:.0f} s? raise --period-ms)"
    return ""


def attach(tool: str, opts: Options) -> Outcome:
    out, start, err = _paths(tool, opts)
    workload = spawn_workload(["-m", str(opts.period_ms), "-o", str(start)])
    try:
        clock = Clock.wait_for(start)
        argv = tool_argv(tool, ["-p", str(workload.pid)], opts.hz, out, 1.0, opts.bpftop)
        watched = watch(argv, err, opts.timeout_s)
    finally:
        stop(workload)
    return _outcome(watched, clock, *_read(tool, out))


def command(tool: str, opts: Options) -> Outcome:
    out, start, err = _paths(tool, opts)
    cmd = [str(STARTUP), "-m", str(opts.period_ms), "-o", str(start), "-x", str(opts.command_s)]
    argv = tool_argv(tool, ["--", *cmd], opts.hz, out, None, opts.bpftop)
    watched = watch(argv, err, opts.timeout_s)
    clock = Clock.wait_for(start, timeout_s=0) if start.exists() else None
    o = _outcome(watched, clock, *_read(tool, out))
    return Outcome(
        first_s=o.first_s, wall_s=o.wall_s, samples=o.samples, named_pct=o.named_pct, note=o.note
    )


def short(tool: str, opts: Options) -> Outcome:
    out, start, err = _paths(tool, opts)
    hogs = [spawn_workload(["-x", "3600"]) for _ in range(opts.hogs)]
    launch_at = time.monotonic() + 0.2
    end = f"{launch_at + opts.life_s:.6f}"
    workload = spawn_workload(["-m", str(opts.period_ms), "-o", str(start), "-X", end])
    try:
        Clock.wait_for(start)
        time.sleep(max(0.0, launch_at - time.monotonic()))
        cpu_before = process_cpu_s(workload.pid) or 0.0
        argv = tool_argv(tool, ["-p", str(workload.pid)], opts.hz, out, None, opts.bpftop)
        watched = watch(argv, err, opts.timeout_s)
    finally:
        target_cpu_s = reap_cpu_s(workload) - cpu_before
        for hog in hogs:
            stop(hog)
    profile, _ = _read(tool, out)
    note = "" if watched.status == 0 else f"exit {watched.status}: {watched.stderr[-160:]!r}"
    expected = target_cpu_s * opts.hz
    return Outcome(
        samples=profile.samples,
        target_cpu_s=target_cpu_s,
        of_cpu_pct=100 * profile.samples / expected if expected > 0 else None,
        note=note,
    )


def steady(tool: str, opts: Options) -> Outcome:
    out, _, err = _paths(tool, opts)
    workload = spawn_workload(["-m", "2", "-x", "3600"])
    argv = tool_argv(tool, ["-p", str(workload.pid)], opts.hz, out, None, opts.bpftop)
    with err.open("wb") as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + opts.timeout_s
        while not sampling(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(opts.settle_s)
        cpu0, t0 = threads_cpu_s(proc.pid), time.monotonic()
        time.sleep(opts.steady_s)
        cpu1, t1 = threads_cpu_s(proc.pid), time.monotonic()
        alive = proc.poll() is None
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stop(workload)
    if not alive:
        return Outcome(note=f"{tool} ended early (exit {proc.returncode})")
    return Outcome(steady_pct=100 * (cpu1 - cpu0) / (t1 - t0))


RUNNERS: dict[str, Callable[[str, Options], Outcome]] = {
    "attach": attach,
    "command": command,
    "short": short,
    "steady": steady,
}


def rows(opts: Options) -> tuple[tuple[str, str, str, str], ...]:
    """(scenario, Outcome field, label, format) for each line of the table."""
    return (
        ("attach", "first_s", "launch -> first sample, -p PID (s)", "{:.3f}"),
        ("command", "first_s", "launch -> first sample, -- COMMAND (s)", "{:.3f}"),
        ("attach", "wall_s", "record 1 s, -p PID: launch -> file written (s)", "{:.3f}"),
        ("attach", "script_s", "  ... -> symbolized text (perf: + perf script) (s)", "{:.3f}"),
        (
            "command",
            "wall_s",
            f"record -- COMMAND (runs {opts.command_s} s): launch -> file (s)",
            "{:.3f}",
        ),
        ("command", "samples", "  samples in it", "{:.0f}"),
        ("command", "named_pct", "  samples naming the workload's function (%)", "{:.0f}"),
        ("attach", "cpu_first_s", "CPU until the first sample (CPU-s)", "{:.2f}"),
        ("attach", "cpu_s", "CPU, whole 1 s record (CPU-s)", "{:.2f}"),
        ("attach", "rss_mib", "peak RSS, 1 s record (MiB)", "{:.0f}"),
        ("attach", "samples", "samples in the 1 s record", "{:.0f}"),
        ("attach", "span_s", "  first to last sample in it (s)", "{:.2f}"),
        ("steady", "steady_pct", f"CPU recording at {opts.hz} Hz, steady (% of a core)", "{:.2f}"),
        (
            "short",
            "samples",
            f"samples, target exits {opts.life_s} s after launch (>=0.9)",
            "{:.0f}",
        ),
        ("short", "of_cpu_pct", "  samples / (target CPU while recorded x Hz) (%)", "{:.0f}"),
    )


def _median(outcomes: list[Outcome], field: str) -> tuple[float | None, str]:
    """The median of ``field`` where it was measured, and "k/n" if some runs missed it."""
    values = [v for o in outcomes if (v := getattr(o, field)) is not None]
    missing = "" if len(values) == len(outcomes) else f" ({len(values)}/{len(outcomes)})"
    return (statistics.median(values) if values else None), missing


def print_table(results: dict[str, dict[str, list[Outcome]]], opts: Options) -> None:
    print(f"\n{'median of runs':<52} {'bpftop':>12} {'perf':>12} {'bpftop/perf':>12}")
    for scenario, field, label, fmt in rows(opts):
        if scenario not in results:
            continue
        cells, values = [], []
        for tool in TOOLS:
            outcomes = results[scenario].get(tool, [])
            value, missing = _median(outcomes, field) if outcomes else (None, "")
            values.append(value)
            text = "-" if not outcomes else ("n/a" if value is None else fmt.format(value))
            cells.append(text + missing)
        ours, theirs = values
        ratio = f"{ours / theirs:.2f}" if ours is not None and theirs else "-"
        print(f"{label:<52} {cells[0]:>12} {cells[1]:>12} {ratio:>12}")
    print_pairs(results)


def print_pairs(results: dict[str, dict[str, list[Outcome]]]) -> None:
    """Short-lived target: bpftop's samples over perf's, run by run (the two ran
    back to back, so a busy moment of the machine hits both)."""
    pairs = zip(*(results.get("short", {}).get(t, []) for t in TOOLS), strict=False)
    ratios = [ours.samples / theirs.samples for ours, theirs in pairs if theirs.samples]
    if ratios:
        each = " ".join(f"{r:.2f}" for r in ratios)
        print(f"short-lived target, bpftop/perf samples per run: {each}; "
              f"median {statistics.median(ratios):.2f} (target >= 0.90)")  # fmt: skip


def _describe(o: Outcome) -> str:
    shown = {
        "first": o.first_s, "wall": o.wall_s, "cpu": o.cpu_s, "rss": o.rss_mib,
        "samples": o.samples, "named%": o.named_pct, "span": o.span_s, "steady%": o.steady_pct,
        "target_cpu": o.target_cpu_s, "of_cpu%": o.of_cpu_pct,
    }  # fmt: skip
    text = " ".join(f"{k}={v:.3g}" for k, v in shown.items() if v is not None)
    return f"{text} {o.note}".strip()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per tool (median; 1 = quick)")
    parser.add_argument("--hz", type=int, default=99)
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--skip-perf", action="store_true", help="bpftop only")
    parser.add_argument(
        "--period-ms", type=float, default=15.0, help="each function's time slot (ms)"
    )
    parser.add_argument("--life-s", type=float, default=1.5, help="the short-lived target's life")
    parser.add_argument("--command-s", type=float, default=3.0, help="the -- COMMAND's life")
    parser.add_argument("--settle-s", type=float, default=5.0)
    parser.add_argument("--steady-s", type=float, default=10.0)
    parser.add_argument("--timeout-s", type=float, default=120.0, help="per command")
    parser.add_argument("--hogs", type=int, default=0, help="busy loops beside the short target")
    parser.add_argument("--bpftop", type=Path, default=BPFTOP, help="the bpftop command to run")
    args = parser.parse_args()
    compile_bpftop()
    tools = TOOLS[:1] if args.skip_perf else TOOLS
    results: dict[str, dict[str, list[Outcome]]] = {s: {t: [] for t in tools} for s in args.only}
    with tempfile.TemporaryDirectory(prefix="bpftop-startup-") as work:
        opts = Options(
            args.hz, args.period_ms, args.life_s, args.command_s, args.settle_s, args.steady_s,
            args.timeout_s, Path(work), args.bpftop, args.hogs,
        )  # fmt: skip
        print(__doc__.split("\n\n    sudo")[0].split("\n\n", 1)[1] + "\n")
        print(f"workload {STARTUP} (4096 functions x {args.period_ms} ms), {args.hz} Hz, "
              f"{args.runs} run(s), tools alternate", flush=True)  # fmt: skip
        for run in range(args.runs):
            order = tools if run % 2 == 0 else tools[::-1]
            for scenario in args.only:
                for tool in order:
                    outcome = RUNNERS[scenario](tool, opts)
                    results[scenario][tool].append(outcome)
                    print(f"run {run + 1}/{args.runs} {scenario:<8} {tool:<7} {_describe(outcome)}",
                          flush=True)  # fmt: skip
    print_table(results, opts)


if __name__ == "__main__":
    main()
