"""Helpers for the app tests: small snapshots and reading what is on screen."""

from __future__ import annotations

from collections.abc import Sequence

from textual.notifications import Notification
from textual.widgets import Static

from bpftop.symbols.frame import Frame
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Phase, ProcessInfo, Snapshot

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
    return [row.node.label for row in app.tree_view.rows]


def tree_line(app: BpftopApp, y: int) -> str:
    return app.tree_view.render_line(y).text


def notifications(app: BpftopApp) -> list[Notification]:
    return list(app._notifications)


def crumbs(app: BpftopApp) -> str:
    return str(app.query_one("#crumbs", Static).content)
