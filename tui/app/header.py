"""The header: what is profiled, how, and how honest the data is (the rate per
probe over real time: ``RateHistory``)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from rich.text import Text

from bpftop.tui.formats.measures import probe_measure
from bpftop.tui.model.snapshot import (
    CHILDREN_HINT_CPU,
    CollectionStats,
    Phase,
    ProcessInfo,
    Snapshot,
)

CMDLINE_WIDTH = 72


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / (1024 * 1024):.1f} MiB"


SPARK = "▁▂▃▄▅▆▇█"


SPARK_WINDOW_S = 60.0
SPARK_CELLS = 12


def minute_of(rates: Sequence[float], interval_s: float, cells: int = SPARK_CELLS) -> list[float]:
    """The ticks of the last ``SPARK_WINDOW_S`` seconds averaged into at most
    ``cells`` values, oldest first (each value: ``window / cells`` seconds)."""
    ticks = max(1, round(SPARK_WINDOW_S / max(interval_s, 1e-3)))
    per = max(1, -(-ticks // cells))  # ticks per cell, rounded up
    recent = list(rates)[-ticks:]
    groups = [recent[max(0, end - per) : end] for end in range(len(recent), 0, -per)]
    return [sum(group) / len(group) for group in reversed(groups)][-cells:]


RATE_WINDOW_S = 5.0
"""The header's rate: counted over the last this many seconds of real time."""


def real_rate(points: Sequence[tuple[float, int]], window_s: float = RATE_WINDOW_S) -> float | None:
    """Samples per second of real time from ``points`` (a probe's elapsed seconds and
    its count, oldest first): over the last ``window_s``, from the newest point at or
    before its start (or the oldest point); None with fewer than two points."""
    if len(points) < 2:
        return None
    now_s, now = points[-1]
    older = [p for p in points[:-1] if p[0] <= now_s - window_s]
    then_s, then = older[-1] if older else points[0]
    span = now_s - then_s
    return (now - then) / span if span > 0 else None


RATE_HISTORY = 600
"""Ticks of rate kept per probe: a minute's worth at intervals down to 0.1 s (the sparkline's)."""


class RateHistory:
    """Per probe: its (elapsed s, count) points and the rate of each tick, over
    real time (``header.real_rate``). A probe switched back to counts on from where
    it was, so its rate starts again from its next two points; a reset (counts going
    down) starts from nothing."""

    def __init__(self) -> None:
        self._points: dict[str, deque[tuple[float, int]]] = {}
        self._rates: dict[str, deque[float]] = {}
        self._rate: dict[str, float | None] = {}
        self._probe = ""

    def add(self, stats: CollectionStats) -> None:
        probe, point = stats.probe, (stats.elapsed_s, stats.total_samples)
        points = self._points.setdefault(probe, deque(maxlen=RATE_HISTORY))
        if not points or point[0] < points[-1][0] or point[1] < points[-1][1]:
            points.clear()  # first seen, or reset: its counting began at 0 s with 0
            points.append((0.0, 0))
        elif probe != self._probe:
            points.clear()  # switched back: it counts on from its next point
        self._probe = probe
        points.append(point)
        rate = real_rate(list(points))
        self._rate[probe] = rate
        self._rates.setdefault(probe, deque(maxlen=RATE_HISTORY)).append(rate or 0.0)

    def of(self, probe: str) -> tuple[tuple[float, ...], float | None]:
        """The probe's per-tick rates (oldest first) and its latest rate."""
        return tuple(self._rates.get(probe, ())), self._rate.get(probe)

    def reset(self) -> None:
        self._points.clear()
        self._rates.clear()
        self._rate.clear()

    def __len__(self) -> int:
        return sum(len(rates) for rates in self._rates.values())


def count_word(probe: str) -> str:
    """What the probe counts: ``samples``, ``hits`` (tracepoints, USDT), ``calls``
    (uprobes, kprobes), ``returns`` (kretprobes), or an event's own name."""
    measure = probe_measure(probe)
    return measure.event if measure is not None else "samples"


def sparkline(values: Sequence[float], width: int = 20) -> str:
    """The last ``width`` values as block characters, scaled to their maximum."""
    shown = list(values)[-width:]
    top = max(shown, default=0.0)
    if top <= 0:
        return SPARK[0] * len(shown)
    return "".join(SPARK[min(7, int(8 * v / top))] if v > 0 else " " for v in shown)


def thread_name(snapshot: Snapshot | None, tid: int | None) -> str:
    """How the Threads view names thread ``tid`` (Python's ``threading`` name, or
    its comm) in ``snapshot``; "" when it is not there."""
    if snapshot is None or tid is None:
        return ""
    return next((t.name for t in snapshot.threads if t.tid == tid), "")


def time_status(snapshot: Snapshot | None, mode_label: str, tid: int | None) -> str:
    """The header's time mode as asked for (``mode_label``), the thread shown by its
    name, and whether the snapshot on screen was still built for another mode."""
    name = thread_name(snapshot, tid)
    status = f"⏱ {mode_label}" + (f" ({name})" if name else "")
    if snapshot is not None and snapshot.time_mode not in ("", mode_label):
        status += " (switching…)"
    return status


def header_text(
    snapshot: Snapshot | None,
    paused: bool,
    interval_s: float,
    rates: Sequence[float] = (),
    status: str = "",
    rate: float | None = None,
) -> Text:
    """Three lines, most important first on each (lines are cut, never wrapped):
    process and its resources; phase, rate and what was lost; probe and our cost.
    ``rate``: the active probe's count per second of real time (``real_rate``);
    ``rates``: its history, one value a tick (the sparkline)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if snapshot is None:
        text.append("bpftop ", "bold")
        text.append("starting…")
        return text
    _append_process(text, snapshot)
    text.append("\n")
    _append_counts(text, snapshot, paused, minute_of(rates, interval_s), status, rate)
    text.append("\nprobe ")
    _append_probe(text, snapshot)
    stats = snapshot.stats
    if snapshot.phase is Phase.SAVED:
        if stats.elapsed_s:
            text.append(f"  recorded for {stats.elapsed_s:.0f}s")
        _append_other_probes(text, snapshot)
        return text
    text.append("  ")
    _append_overhead(text, snapshot)  # right after the probe: the line's end may be cut
    text.append(f"  every {interval_s:g}s  elapsed {stats.elapsed_s:.0f}s")
    _append_other_probes(text, snapshot)
    return text


def _append_counts(
    text: Text,
    snapshot: Snapshot,
    paused: bool,
    rates: Sequence[float],
    status: str,
    rate: float | None,
) -> None:
    """The second line: phase, samples (or time) and their rate (``rates``: the
    last minute, ``SPARK_CELLS`` values), what was lost: perf-buffer events,
    dropped samples (when any), failed stack reads (by kind, when any)."""
    if paused:
        text.append(" PAUSED ", "bold reverse yellow")
        text.append(" ")
    _append_phase(text, snapshot)
    stats = snapshot.stats
    saved = snapshot.phase is Phase.SAVED  # from a file: no rate, refresh or cost
    if snapshot.weight_unit:  # uretprobe latency / offcpu: the tree counts time
        seconds = snapshot.tree.total_count / 1e9
        text.append(f"  {seconds:,.3f} s of time in {snapshot.probe_events:,} events ")
    else:
        text.append(f"  {stats.total_samples:,} {count_word(stats.probe)}  ")
    if not saved:
        text.append("…/s " if rate is None else f"{rate:,.1f}/s ")
        if rates:
            text.append(sparkline(rates, SPARK_CELLS), "green")
        text.append("  ")
    text.append(f"lost {stats.lost_events:,}", "bold red" if stats.lost_events else "")
    if stats.dropped_samples:
        text.append(f"  dropped {stats.dropped_samples:,}", "bold red")
    failed = stats.failed_stacks
    text.append(f"  failed {failed:,}", "bold red" if failed else "")
    if failed:
        kinds = sorted(stats.stack_errors, key=lambda kind: -kind[1])
        text.append(" (" + ", ".join(f"{kind} {n:,}" for kind, n in kinds) + ")", "red")
    if stats.early_samples and not saved:
        text.append(f"  {stats.early_samples:,} early (perf_event)", "yellow")
    if stats.left_out and not saved:
        text.append(f"  {stats.left_out_samples:,} early left out", "yellow")
    if stats.walker_not_started:
        text.append(f"  {stats.walker_not_started:,} fp stacks (walker not started)", "yellow")
    if status:
        text.append(f"  {status}", "bold cyan")
    if snapshot.message:
        text.append(f"  {snapshot.message}", "italic")


def _append_probe(text: Text, snapshot: Snapshot) -> None:
    """The active probe (once: the others and the switch's answer end the line)."""
    text.append(snapshot.stats.probe, "bold reverse" if len(snapshot.probes) > 1 else "bold")
    if snapshot.weight_unit:
        text.append(" (time, ns)", "bold")


def _append_other_probes(text: Text, snapshot: Snapshot) -> None:
    """The other probes used this session (each kept its profile), and the last
    switch's answer unless it only names the active probe."""
    active = snapshot.stats.probe
    others = [spec for spec in snapshot.probes if spec != active]
    if others:
        text.append("  also: " + " ".join(others), "dim")
    message = snapshot.probe_message
    if message and message != f"probe {active}":
        rejected = message.startswith("probe not changed")
        text.append(f"  {message}", "bold red" if rejected else "cyan")


def _append_process(text: Text, snapshot: Snapshot) -> None:
    proc = snapshot.process
    text.append("bpftop ", "bold")
    if proc is None:
        text.append("waiting for process information")
        return
    text.append(proc.name, "bold cyan")
    if proc.pid == 0 and proc.cpus and snapshot.phase is not Phase.SAVED:
        _append_system(text, proc)
        return
    if snapshot.phase is not Phase.SAVED:
        text.append(f"  pid {proc.pid}  ")
        if proc.stopped and snapshot.phase is Phase.SAMPLING:  # (held while compiling)
            text.append(f"STOPPED (kill -CONT {proc.pid})", "bold red")
            text.append("  ")
        text.append(f"CPU {proc.cpu_percent:.1f}%  RSS {_mib(proc.rss_bytes)}  ")
        if proc.children and proc.cpu_percent < CHILDREN_HINT_CPU and proc.alive:
            plural = "es" if proc.children > 1 else ""
            text.append(f"its {proc.children} child process{plural} run unprofiled: ", "yellow")
            text.append("--children", "bold yellow")
            text.append("  ")
    else:  # a saved profile: no live process, and maybe no pid (folded files have none)
        text.append(f"  pid {proc.pid}  " if proc.pid else "  ")
    text.append(f"threads {proc.num_threads}  ")
    text.append(_truncate(proc.cmdline, CMDLINE_WIDTH), "dim")


def _append_system(text: Text, system: ProcessInfo) -> None:
    """-a: the whole system's CPU and memory, and how much of it was sampled."""
    text.append(f"  CPU {system.cpu_percent:.1f}% of {system.cpus} CPUs  ")
    text.append(f"mem used {_mib(system.rss_bytes)}  ")
    text.append(f"sampled {system.processes:,} processes, {system.num_threads:,} threads")


def _append_overhead(text: Text, snapshot: Snapshot) -> None:
    """bpftop's own cost: its CPU % and its BPF programs' run time per second."""
    o = snapshot.overhead
    busy = o.cpu_percent >= 10 or o.bpf_run_ns_per_s >= 50e6
    text.append("│ cost ", "dim")
    if snapshot.bpf_loading and snapshot.phase is not Phase.EXITED:
        text.append("starting BPF…", "magenta")  # the compile's CPU is not profiling's cost
        return
    text.append(
        f"CPU {o.cpu_percent:.1f}% BPF {o.bpf_run_ns_per_s / 1e6:.2f}ms/s",
        "bold red" if busy else "",
    )


def _append_phase(text: Text, snapshot: Snapshot) -> None:
    phase = snapshot.phase
    if phase is Phase.EXITED:
        text.append("✖ process exited", "bold yellow")
        text.append(" — showing everything collected")
    elif phase is Phase.COMPILING:
        text.append(f"◌ {phase.value}", "bold magenta")
    elif phase is Phase.SAMPLING:
        text.append(f"● {phase.value}", "bold green")
    else:
        text.append(f"○ {phase.value}", "bold")
    if snapshot.bpf_problem:  # why: at the line's end, and in Diagnostics
        text.append("  perf_event only", "bold yellow")
