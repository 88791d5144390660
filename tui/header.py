"""The header: what is profiled, how, and how honest the data is."""

from __future__ import annotations

from rich.text import Text

from bpftop.tui.model.snapshot import Phase, Snapshot

CMDLINE_WIDTH = 72


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / (1024 * 1024):.1f} MiB"


def header_text(snapshot: Snapshot | None, paused: bool, interval_s: float) -> Text:
    """Three lines: process, resources/probe, phase/counters."""
    text = Text()
    if snapshot is None:
        text.append("bpftop ", "bold")
        text.append("starting…")
        return text
    proc = snapshot.process
    text.append("bpftop ", "bold")
    if proc is not None:
        text.append(proc.name, "bold cyan")
        text.append(f"  pid {proc.pid}  ")
        text.append(_truncate(proc.cmdline, CMDLINE_WIDTH), "dim")
        text.append("\n")
        text.append(f"CPU {proc.cpu_percent:.1f}%  RSS {_mib(proc.rss_bytes)}  ")
        text.append(f"threads {proc.num_threads}  ")
    else:
        text.append("waiting for process information\n")
    stats = snapshot.stats
    text.append("│ probe ")
    text.append(stats.probe, "bold")
    text.append(f"  every {interval_s:g}s  elapsed {stats.elapsed_s:.0f}s\n")
    _append_phase(text, snapshot)
    text.append(f"  {stats.samples_per_s:,.1f} samples/s  {stats.total_samples:,} samples  ")
    text.append(f"lost {stats.lost_events:,}", "bold red" if stats.lost_events else "")
    failed = stats.failed_stacks
    text.append(f"  failed stacks {failed:,}", "bold red" if failed else "")
    if snapshot.message:
        text.append(f"  {snapshot.message}", "italic")
    if paused:
        text.append("  ")
        text.append(" PAUSED ", "bold reverse yellow")
    return text


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


def placeholder_text(snapshot: Snapshot | None) -> str:
    """What the empty tree says."""
    if snapshot is None or snapshot.phase is Phase.STARTING:
        return "starting…"
    if snapshot.phase is Phase.COMPILING:
        return "compiling BPF program… the first samples arrive once it is loaded"
    if snapshot.phase is Phase.EXITED:
        return "process exited before any sample was taken"
    return "no samples yet"
