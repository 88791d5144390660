"""The Textual app: renders the snapshots a ``SnapshotSource`` posts.

Snapshots arrive on the source's thread; they are parked in one slot and a
message wakes the app thread, so a slow redraw coalesces ticks instead of
queueing them. Widgets are only touched on the app thread.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Footer, Static

from bpftop.bpf.errors import BpftopError, OutputError
from bpftop.tui.calltree_view import CallTreeView
from bpftop.tui.header import header_text, placeholder_text
from bpftop.tui.help import HelpScreen
from bpftop.tui.hot_table import HotTable
from bpftop.tui.model.folded import write_folded
from bpftop.tui.model.snapshot import Snapshot
from bpftop.tui.source import SnapshotSource


class SnapshotReady(Message):
    """A new snapshot is waiting in the app's slot."""


class SourceFailed(Message):
    """The source hit an error the user must act on."""

    def __init__(self, error: BpftopError) -> None:
        super().__init__()
        self.error = error


def default_export_name(now: datetime | None = None) -> str:
    return f"bpftop-{(now or datetime.now()):%Y%m%d-%H%M%S}.folded"


class BpftopApp(App[None]):
    """Live profile view: header, hot functions, call tree."""

    TITLE = "bpftop"

    CSS = """
    #header { height: auto; padding: 0 1; background: $boost; }
    #hot { height: 12; border: round $panel; }
    #tree { height: 1fr; border: round $panel; }
    #hot:focus, #tree:focus { border: round $accent; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("space", "toggle_pause", "Pause"),
        Binding("tab", "switch_view", "Switch view", priority=True),
        Binding("w", "write_folded", "Write folded"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(
        self,
        source: SnapshotSource,
        interval_s: float = 1.0,
        *,
        export_path: str | Path | None = None,
        export_dir: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.interval_s = interval_s
        self.export_path = Path(export_path) if export_path is not None else None
        self.export_dir = Path(export_dir) if export_dir is not None else Path(".")
        self.error: BpftopError | None = None
        self.shown: Snapshot | None = None
        self.latest: Snapshot | None = None
        self.paused = False
        self.last_written: Path | None = None
        self._slot_lock = threading.Lock()
        self._slot: Snapshot | None = None
        self._posted = False
        self._source_started = False
        self._source_stopped = False

    def compose(self) -> ComposeResult:
        yield Static(header_text(None, False, self.interval_s), id="header")
        hot = HotTable(id="hot")
        hot.border_title = "Hot functions (by self)"
        yield hot
        tree = CallTreeView(id="tree")
        tree.border_title = "Call tree (top-down): total %  self %  function  module"
        tree.placeholder = placeholder_text(None)
        yield tree
        yield Footer()

    @property
    def tree_view(self) -> CallTreeView:
        return self.query_one("#tree", CallTreeView)

    @property
    def hot_table(self) -> HotTable:
        return self.query_one("#hot", HotTable)

    # -- source wiring --------------------------------------------------------
    def on_mount(self) -> None:
        self.tree_view.focus()
        try:
            self.source.start(self._snapshot_from_source, self._error_from_source)
            self._source_started = True
        except BpftopError as err:
            self._fail(err)

    def on_unmount(self) -> None:
        self._stop_source()

    def _stop_source(self) -> None:
        if not self._source_stopped:
            self._source_stopped = True
            self.source.stop()

    def _snapshot_from_source(self, snapshot: Snapshot) -> None:
        """Called on the source's thread: park the snapshot, wake the app once."""
        with self._slot_lock:
            self._slot = snapshot
            if self._posted:
                return
            self._posted = True
        self.post_message(SnapshotReady())

    def _error_from_source(self, error: BpftopError) -> None:
        self.post_message(SourceFailed(error))

    def on_snapshot_ready(self, _message: SnapshotReady) -> None:
        with self._slot_lock:
            snapshot, self._slot, self._posted = self._slot, None, False
        if snapshot is None:
            return
        self.latest = snapshot
        if not self.paused:
            self.show(snapshot)

    def on_source_failed(self, message: SourceFailed) -> None:
        self._fail(message.error)

    def _fail(self, error: BpftopError) -> None:
        self.error = error
        self.exit(return_code=error.exit_code)

    # -- rendering ------------------------------------------------------------
    def show(self, snapshot: Snapshot) -> None:
        """Render one snapshot into the widgets."""
        self.shown = snapshot
        self._refresh_header()
        self.hot_table.update_hot(snapshot.hot, snapshot.tree.total_count)
        tree = self.tree_view
        tree.set_placeholder(placeholder_text(snapshot))
        tree.set_tree(snapshot.tree)

    def _refresh_header(self) -> None:
        text = header_text(self.shown, self.paused, self.interval_s)
        self.query_one("#header", Static).update(text)

    # -- actions --------------------------------------------------------------
    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused and self.latest is not None and self.latest is not self.shown:
            self.show(self.latest)
        else:
            self._refresh_header()

    def action_switch_view(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        if self.tree_view.has_focus:
            self.hot_table.focus()
        else:
            self.tree_view.focus()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def export_target(self) -> Path:
        if self.export_path is not None:
            return self.export_path
        return self.export_dir / default_export_name()

    def action_write_folded(self) -> None:
        if self.shown is None:
            self.notify("nothing to write yet", severity="warning")
            return
        target = self.export_target()
        try:
            lines = write_folded(self.shown.tree, target)
        except OutputError as err:
            self.notify(str(err), title="write failed", severity="error", timeout=10)
            return
        self.last_written = target
        self.notify(f"wrote {lines} stacks to {target}", title="folded stacks")
