"""Helpers for the app tests: small snapshots, reading what is on screen, and
counting what went to a background worker."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import pytest
from textual.notifications import Notification
from textual.widgets import Static

from bpftop.symbols.frame import Frame
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Phase, ProcessInfo, Snapshot
from bpftop.tui.widgets.background import Background
from tests.tui.demo_fixture import demo_snapshot
from tests.tui.fake_source import FakeSource

PROCESS = ProcessInfo(
    pid=99, name="small", cmdline="./small --x", cpu_percent=50.0, rss_bytes=1 << 20,
    num_threads=1, alive=True,
)  # fmt: skip


def f(name: str) -> Frame:
    return Frame(name, "/bin/small", 0)


def snapshot_of(
    stacks: Sequence[tuple[Sequence[str], int]],
    seq: int = 1,
    phase: Phase = Phase.SAMPLING,
    process: ProcessInfo | None = PROCESS,
) -> Snapshot:
    profile = Profile()
    for names, count in stacks:
        profile.add("small", [f(n) for n in names], count)
    stats = CollectionStats(probe="profile:hz:99", total_samples=profile.total_samples)
    return Snapshot(
        seq=seq,
        phase=phase,
        stats=stats,
        process=process,
        tree=profile.tree(),
        hot=profile.hot_functions(200),
    )


BASE = [(["main", "work", "leaf_a"], 6), (["main", "work", "leaf_b"], 3), (["main", "idle"], 1)]


def header(app: BpftopApp) -> str:
    return str(app.query_one("#header", Static).content)


def tree_labels(app: BpftopApp) -> list[str]:
    return [row.node.label for row in app.views.tree_view.rows]


def tree_line(app: BpftopApp, y: int) -> str:
    return app.views.tree_view.render_line(y).text


def notifications(app: BpftopApp) -> list[Notification]:
    return list(app._notifications)


def crumbs(app: BpftopApp) -> str:
    return str(app.query_one("#crumbs", Static).content)


def top_row(app: BpftopApp, index: int) -> list[str]:
    """Row ``index`` of the Top view as it is drawn, cut into its columns."""
    table = app.views.top_view
    width = table.scrollable_content_region.width
    drawn = table.row_line(index, width).strip(width)
    return [drawn.crop(start, start + span).text.strip() for start, span in table.column_spans()]


def top_column(app: BpftopApp, column: int) -> list[str]:
    """One column of every row of the Top view, as drawn."""
    return [top_row(app, i)[column] for i in range(app.views.top_view.row_count)]


class WorkerJobs:
    """Counts the jobs a ``Background`` hands to its worker thread: those that
    outlive its synchronous wait, after which it is busy until they are done."""

    def __init__(self, background: Background[Any], monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.background = background
        submit = background.submit

        def counting(key: Hashable, job: Callable[[], Any], on_done: Callable[[Any], None]) -> Any:
            idle = not background.busy
            found = submit(key, job, on_done)
            self.count += idle and background.busy
            return found

        monkeypatch.setattr(background, "submit", counting)


SIZE = (120, 36)
"""The terminal size of the Pilot tests of views and actions."""


def demo_app(tmp_path: Path | None = None) -> tuple[BpftopApp, FakeSource]:
    """The app on the demo fixture's first snapshot (``w`` writes under ``tmp_path``)."""
    source = FakeSource([demo_snapshot()])
    return BpftopApp(source, 1.0, export_dir=tmp_path), source


def cursor_label(app: BpftopApp) -> str:
    """The label of the call tree's cursor row."""
    return tree_labels(app)[app.views.tree_view.cursor]
