"""The Diagnostics view: can the numbers on the other views be trusted?

Shows, from one snapshot: lost / dropped / failed-stack counters, why frames
are unknown (share of samples, with a hint), every BPF map of ours (type,
entries used vs. max, key/value sizes), the .eh_frame walker's state (tables
loaded, rows used, and what it could not take), what the Python frame walker
did (when a Python process was sampled), what profiling costs, and
bpftop's own internal errors with the log that holds their tracebacks. The
verdict line weighs all of them.
"""

from __future__ import annotations

from dataclasses import astuple
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.strip import Strip

from bpftop.base.crash_log import log_path, logged_errors
from bpftop.bpf.python_walk import MAX_FRAMES as PY_MAX_FRAMES
from bpftop.tui.collect.diag_facts import REFRESH_S
from bpftop.tui.model.snapshot import MapUsage, PythonCounts, Snapshot, UnwindState
from bpftop.tui.views.shown import Shown
from bpftop.tui.widgets.lines_view import CachedLinesView

FULL_MAP = 0.9  # a map this full may start dropping entries


def verdict(snapshot: Snapshot) -> Text:
    """One line: trustworthy, or what is wrong."""
    stats = snapshot.stats
    total = max(1, stats.total_samples)
    problems: list[str] = []
    if snapshot.bpf_problem:
        problems.append(f"BPF could not load, perf_event samples only: {snapshot.bpf_problem}")
    if stats.lost_events:
        problems.append(f"{stats.lost_events:,} perf-buffer events lost")
    if stats.dropped_samples:
        why = "counts map full, or skipped by the kernel"
        problems.append(f"{stats.dropped_samples:,} samples dropped ({why})")
    if stats.failed_stacks:
        problems.append(f"{100 * stats.failed_stacks / total:.1f}% of stacks unreadable")
    unknown = max((u.samples for u in snapshot.unknown), default=0)
    if unknown:
        problems.append(f"up to {100 * unknown / total:.1f}% of samples have unknown frames")
    full = [m.name for m in snapshot.maps if _fill(m) >= FULL_MAP]
    if full:
        problems.append("nearly full: " + ", ".join(full))
    problems += unwind_problems(snapshot.unwind)
    python = snapshot.python
    if python is not None and python.truncated:
        problems.append(f"{python.truncated:,} Python stacks cut at {PY_MAX_FRAMES} frames")
    if python is not None and python.read_errors:
        problems.append(f"{python.read_errors:,} Python walks stopped at an unreadable frame")
    if stats.walker_not_started:
        problems.append(
            f"{stats.walker_not_started:,} user stacks by frame pointers: the .eh_frame walker "
            "could not start (no user registers in the context, or no walker for the probe kind)"
        )
    if not problems:
        return Text("✔ nothing lost, every frame named: the numbers can be trusted", "bold green")
    return Text("⚠ " + "; ".join(problems), "bold yellow")


def unwind_problems(unwind: UnwindState | None) -> list[str]:
    """What the walker could not take: stacks through those files are cut short."""
    if unwind is None:
        return []
    found = []
    if unwind.tables_refused:
        found.append(f"{unwind.tables_refused:,} unwind table(s) did not fit")
    if unwind.mappings_dropped:
        found.append(f"{unwind.mappings_dropped:,} mapping(s) past the walker's 256 per process")
    if unwind.files_without_cfi:
        found.append(f"{unwind.files_without_cfi:,} file(s) without CFI (frame pointers only)")
    if unwind.processes_over_limit:
        found.append(f"{unwind.processes_over_limit:,} process(es) past the feed's limit (fp)")
    return found


def unwind_table(unwind: UnwindState | None) -> Table:
    """The .eh_frame walker: its tables and what it could not take."""
    table = Table(title="Unwinder (.eh_frame walker)", title_justify="left", box=None)
    table.add_column("state")
    table.add_column("value", justify="right")
    if unwind is None:
        table.add_row("walker", "not loaded (frame pointers only)")
        return table
    table.add_row("mode", unwind.mode)
    table.add_row("tables loaded", f"{unwind.tables_loaded:,}")
    for what, used, most in (
        ("rows used / max", unwind.rows_used, unwind.rows_max),
        ("index used / max", unwind.index_used, unwind.index_max),
    ):
        full = most > 0 and used / most >= FULL_MAP
        table.add_row(what, Text(f"{used:,} / {most:,}", "bold red" if full else ""))
    table.add_row("tables that did not fit", _bad(unwind.tables_refused))
    table.add_row("mappings dropped (past 256 per process)", _bad(unwind.mappings_dropped))
    table.add_row("files without CFI", _bad(unwind.files_without_cfi))
    table.add_row("processes with tables", f"{unwind.processes:,}")
    table.add_row("processes waiting for tables", f"{unwind.processes_waiting:,}")
    table.add_row("processes past the feed's limit", _bad(unwind.processes_over_limit))
    for reason, samples in unwind.fp_fallbacks:
        table.add_row(f"samples by frame pointers: {reason}", f"{samples:,}")
    return table


def python_table(python: PythonCounts | None) -> tuple[RenderableType, ...]:
    """The Python frame walker's counts since load; nothing when no Python ran."""
    if python is None or not any(astuple(python)):
        return ()
    table = Table(title="Python frames (CPython walker)", title_justify="left", box=None)
    table.add_column("samples")
    table.add_column("value", justify="right")
    table.add_row("with Python frames", f"{python.walked:,}")
    table.add_row(f"cut at {PY_MAX_FRAMES} frames (root end)", _bad(python.truncated))
    table.add_row("walks stopped at an unreadable frame", _bad(python.read_errors))
    table.add_row("threads of a Python process with no Python frame", f"{python.no_frame:,}")
    table.add_row("not taken: the thread did not hold the GIL (--gil)", f"{python.no_gil:,}")
    return Text(""), table


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
    if stats.early_samples or stats.walker_not_started:  # stacks of two qualities mix
        for quality, n in stats.stack_quality:
            table.add_row(f"user stacks by {quality}", f"{n:,}")
    for reason, n in stats.left_out:  # not in the profile: less complete than BPF's
        table.add_row(f"left out: {reason}", f"{n:,}")
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
    title = f"BPF maps (read every {REFRESH_S:.0f} s)"
    table = Table(title=title, title_justify="left", box=None)
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
    text = Text(f"Overhead (mean of the last {REFRESH_S:.0f} s)  ", "bold")
    text.append(f"bpftop CPU {o.cpu_percent:.1f}%   ")
    text.append(f"BPF programs {o.bpf_run_ns_per_s / 1e6:.2f} ms/s over ")
    text.append(f"{o.bpf_runs_per_s:,.0f} runs/s")
    return text


def diagnostics(snapshot: Snapshot | None) -> RenderableType:
    if snapshot is None:
        return Text("no data yet", "italic")
    notices = [Text(f"Note: {notice}", "yellow") for notice in snapshot.notices]
    return Group(
        verdict(snapshot),
        *notices,
        Text(""),
        counters_table(snapshot),
        Text(""),
        unknown_table(snapshot),
        Text(""),
        maps_table(snapshot.maps),
        Text(""),
        unwind_table(snapshot.unwind),
        *python_table(snapshot.python),
        Text(""),
        overhead_text(snapshot),
        *errors_text(),
    )


def errors_text() -> tuple[Text, ...]:
    """Bugs of ours this run (none: nothing) and the file with their tracebacks."""
    logged = logged_errors()
    if not logged:
        return ()
    text = Text("Internal errors  ", "bold")
    text.append(f"{len(logged)}, last: {logged[-1]}", "bold red")
    return Text(""), text.append(f" (tracebacks in {log_path()})")


def _preallocated(m: MapUsage) -> bool:
    """Array maps always hold max_entries entries: "full" means nothing there
    (except the walker's rows and index, whose written slots are counted)."""
    return m.kind.endswith("array") and not m.slots_used


def _fill(m: MapUsage) -> float:
    if _preallocated(m) or m.max_entries <= 0:
        return 0.0
    return m.used / m.max_entries


def _bad(n: int) -> Text:
    return Text(f"{n:,}", "bold red" if n else "")


class DiagnosticsView(CachedLinesView, can_focus=True):
    """The page for one snapshot, rendered to lines once (a Static in a
    scroll container had rich lay its tables out two or three times per update,
    and every update took a layout pass: 50 ms for the first switch to it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "scroll_by(-1)", "Up", show=False),
        Binding("down,j", "scroll_by(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "scroll_by(-1_000_000)", "First", show=False),
        Binding("end", "scroll_by(1_000_000)", "Last", show=False),
    ]
    range_noun = "lines"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.body: RenderableType = diagnostics(None)
        self._shown: Snapshot | None = None
        self._page: list[Strip] = []  # body rendered at _page_width
        self._page_width = 0

    def show(self, shown: Shown) -> None:
        """What ``shown``'s snapshot says about its own numbers."""
        self.update_from(shown.snapshot)

    def update_from(self, snapshot: Snapshot | None) -> None:
        if snapshot is self._shown and self._page:
            return  # a view switch between ticks: the page stands
        self._shown = snapshot
        self.body = diagnostics(snapshot)
        self._render_page()

    def _render_page(self) -> None:
        width = self.content_size.width
        if not width:
            return  # not laid out yet: on_resize renders it
        console = self.app.console
        lines = console.render_lines(self.body, console.options.update_width(width), pad=True)
        self._page = [Strip(line, width) for line in lines]
        self._page_width = width
        self.virtual_size = Size(0, len(self._page))
        self.redraw()

    def on_resize(self) -> None:
        if self.content_size.width != self._page_width:
            self._render_page()

    def action_scroll_by(self, lines: int) -> None:
        self.scroll_to_line(self.scroll_y + lines)

    def action_page(self, pages: int) -> None:
        self.action_scroll_by(pages * max(1, self.content_size.height - 1))

    def draw_line(self, y: int, width: int) -> Strip:
        index = y + round(self.scroll_y)
        return self._page[index] if index < len(self._page) else Strip.blank(width)
