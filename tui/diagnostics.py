"""The Diagnostics view: can the numbers on the other views be trusted?

Shows, from one snapshot: lost / dropped / failed-stack counters, why frames
are unknown (share of samples, with a hint), bpftop's own BPF maps (type,
entries used vs. max, key/value sizes) and what profiling costs.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from bpftop.tui.model.snapshot import MapUsage, Snapshot

FULL_MAP = 0.9  # a map this full may start dropping entries


def verdict(snapshot: Snapshot) -> Text:
    """One line: trustworthy, or what is wrong."""
    stats = snapshot.stats
    total = max(1, stats.total_samples)
    problems: list[str] = []
    if stats.lost_events:
        problems.append(f"{stats.lost_events:,} perf-buffer events lost")
    if stats.dropped_samples:
        problems.append(f"{stats.dropped_samples:,} samples dropped (counts map full)")
    if stats.failed_stacks:
        problems.append(f"{100 * stats.failed_stacks / total:.1f}% of stacks unreadable")
    unknown = max((u.samples for u in snapshot.unknown), default=0)
    if unknown:
        problems.append(f"up to {100 * unknown / total:.1f}% of samples have unknown frames")
    full = [m.name for m in snapshot.maps if _fill(m) >= FULL_MAP]
    if full:
        problems.append("nearly full: " + ", ".join(full))
    if not problems:
        return Text("✔ nothing lost, every frame named: the numbers can be trusted", "bold green")
    return Text("⚠ " + "; ".join(problems), "bold yellow")


def counters_table(snapshot: Snapshot) -> Table:
    stats = snapshot.stats
    table = Table(title="Collection", title_justify="left", expand=False, box=None)
    table.add_column("counter")
    table.add_column("value", justify="right")
    table.add_row("samples", f"{stats.total_samples:,}")
    table.add_row("lost perf-buffer events", _bad(stats.lost_events))
    table.add_row("dropped samples (map full)", _bad(stats.dropped_samples))
    for kind, n in stats.stack_errors:
        table.add_row(f"failed stack reads: {kind}", _bad(n))
    return table


def unknown_table(snapshot: Snapshot) -> Table:
    total = max(1, snapshot.stats.total_samples)
    table = Table(title="Unknown frames, by reason", title_justify="left", box=None)
    table.add_column("reason")
    table.add_column("% samples", justify="right")
    table.add_column("samples", justify="right")
    table.add_column("what to do", style="dim")
    for share in sorted(snapshot.unknown, key=lambda u: -u.samples):
        pct = f"{100 * share.samples / total:.1f}%"
        table.add_row(share.reason, pct, f"{share.samples:,}", share.hint)
    if not snapshot.unknown:
        table.add_row("none", "0.0%", "0", "")
    return table


def maps_table(maps: tuple[MapUsage, ...]) -> Table:
    table = Table(title="BPF maps", title_justify="left", box=None)
    for name, justify in (("map", "left"), ("type", "left"), ("used / max", "right"),
                          ("fill", "right"), ("key B", "right"), ("value B", "right")):  # fmt: skip
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for m in maps:
        fill = _fill(m)
        style = "bold red" if fill >= FULL_MAP else ""
        shown = "—" if _preallocated(m) else f"{100 * fill:.0f}%"
        table.add_row(
            m.name, m.kind, f"{m.used:,} / {m.max_entries:,}", Text(shown, style),
            str(m.key_size), str(m.value_size),
        )  # fmt: skip
    if not maps:
        table.add_row("(not loaded yet)", "", "", "", "", "")
    return table


def overhead_text(snapshot: Snapshot) -> Text:
    o = snapshot.overhead
    text = Text("Overhead  ", "bold")
    text.append(f"bpftop CPU {o.cpu_percent:.1f}%   ")
    text.append(f"BPF programs {o.bpf_run_ns_per_s / 1e6:.2f} ms/s over ")
    text.append(f"{o.bpf_runs_per_s:,.0f} runs/s")
    return text


def diagnostics(snapshot: Snapshot | None) -> RenderableType:
    if snapshot is None:
        return Text("no data yet", "italic")
    return Group(
        verdict(snapshot),
        Text(""),
        counters_table(snapshot),
        Text(""),
        unknown_table(snapshot),
        Text(""),
        maps_table(snapshot.maps),
        Text(""),
        overhead_text(snapshot),
    )


def _preallocated(m: MapUsage) -> bool:
    """Array maps always hold max_entries entries: "full" means nothing there."""
    return m.kind.endswith("array")


def _fill(m: MapUsage) -> float:
    if _preallocated(m) or m.max_entries <= 0:
        return 0.0
    return m.used / m.max_entries


def _bad(n: int) -> Text:
    return Text(f"{n:,}", "bold red" if n else "")


class DiagnosticsView(VerticalScroll, can_focus=True):
    """A scrollable page rebuilt from each snapshot (it is small)."""

    body: RenderableType = ""

    def compose(self) -> ComposeResult:
        self.body = diagnostics(None)
        yield Static(self.body, id="diag-body")

    def update_from(self, snapshot: Snapshot | None) -> None:
        self.body = diagnostics(snapshot)
        self.query_one("#diag-body", Static).update(self.body)
