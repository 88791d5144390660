"""The app's side of a ``SnapshotSource``: start, stop, and a one-slot mailbox.

Snapshots arrive on the source's thread; they are parked in one slot and a
message wakes the app thread, so a slow redraw coalesces ticks instead of
queueing them. Subclasses get each snapshot in ``on_new_snapshot`` on the
app thread. Commands for a ``ControlledSource`` (reset, time mode) go out
here. Errors the user must act on end the app with their exit code; a
crash is logged (:mod:`bpftop.base.crash_log`) and kept in ``crash``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from textual.app import App
from textual.filter import LineFilter
from textual.message import Message
from textual.notifications import SeverityLevel

from bpftop.base.crash_log import log_exception
from bpftop.base.errors import BpftopError
from bpftop.tui.collect.snapshot_source import ControlledSource, NativeFrames, SnapshotSource
from bpftop.tui.model.snapshot import Snapshot
from bpftop.tui.model.timemode import TimeSetting, mode_label
from bpftop.tui.model.viewstate import ViewState
from bpftop.tui.widgets.monochrome import safe_filters
from bpftop.tui.widgets.visible import VisibleControls


class SnapshotReady(Message):
    """A new snapshot is waiting in the app's slot."""


class SourceFailed(Message):
    """The source hit an error the user must act on."""

    def __init__(self, error: BpftopError) -> None:
        super().__init__()
        self.error = error


class SourceApp(App[None]):
    """An app fed by a snapshot source; stops the source on every exit path."""

    def __init__(self, source: SnapshotSource) -> None:
        super().__init__()
        self.source = source
        self.error: BpftopError | None = None
        self.latest: Snapshot | None = None
        self._slot_lock = threading.Lock()
        self._slot: Snapshot | None = None
        self._posted = False
        self._source_started = False
        self._source_stopped = False
        self.time_setting = TimeSetting()
        self.thread: int | None = None
        self.native = False  # native frames only asked for (P, after Python only)
        self._visible_controls = VisibleControls()
        self.crash: str | None = None
        """Set when the app crashed (Textual ends it): the one line to print."""
        self._exit_requested = False

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Textual's, but plain text unless asked: messages quote symbol names,
        paths and search patterns, where a ``[/x]`` is text, not a closing tag."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then one that spells out control characters in every
        line of every widget (names come from programs we do not trust); NO_COLOR's
        grey by a filter that survives unstyled segments (widgets/monochrome)."""
        return [*safe_filters(super().get_line_filters()), self._visible_controls]

    def request_exit(self) -> None:
        """Quit, from any thread or a signal handler, also before the app runs:
        the loop is woken (a plain ``exit`` from a signal handler waits for
        the loop's next event), and an app not running yet quits when it starts."""
        self._exit_requested = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.exit)

    def start_source(self) -> None:
        if self._exit_requested:  # asked to quit before it ran
            self.exit()
            return
        try:
            self.source.start(self._snapshot_from_source, self._error_from_source)
            self._source_started = True
        except BpftopError as err:
            self._fail(err)

    def on_new_snapshot(self, snapshot: Snapshot) -> None:
        """Override: called on the app thread with the newest snapshot."""
        self.latest = snapshot

    def on_reset(self) -> None:
        """Override: the source was asked to reset."""

    def on_time_mode(self) -> None:
        """Override: the source was asked for ``self.time_setting``."""

    def action_reset(self) -> None:
        if not isinstance(self.source, ControlledSource):
            self.notify("this source cannot reset", severity="warning")
            return
        self.source.reset()
        self.on_reset()
        self.notify("counters cleared", title="reset")

    def action_cycle_time_mode(self) -> None:
        if not isinstance(self.source, ControlledSource):
            self.notify("this source has one time mode", severity="warning")
            return
        self.time_setting = self.time_setting.next()
        self.source.set_time_mode(self.time_setting)
        self.on_time_mode()
        self.notify(f"time mode: {self.time_setting.label}", title="time")

    @property
    def mode_label(self) -> str:
        """The mode (and thread) the next snapshots are asked to be built for."""
        return mode_label(self.time_setting, self.thread, self.native)

    def select_thread(self, tid: int | None) -> None:
        """Ask for one thread's stacks only (None: all threads)."""
        if not isinstance(self.source, ControlledSource):
            self.notify("this source cannot show one thread", severity="warning")
            return
        self.thread = tid
        self.source.select_thread(tid)
        self.on_time_mode()
        self.notify("all threads" if tid is None else f"thread {tid} only", title="threads")

    def frames_step(self, state: ViewState, only: str) -> str:
        """K, U: those frames only (again: all); P: Python frames only, then native
        frames only (a source that can: the collector), then merged again. What is
        shown now."""
        if only == "python" and self.native:
            self.show_native(False)
            return "merged"
        if only == "python" and state.frames == "python" and self.show_native(True):
            state.frames = "all"
            return "native"
        return state.toggle_frames(only)

    def show_native(self, on: bool) -> bool:
        """Ask for native frames only (or the merged stacks again); False if the
        source cannot (a saved profile keeps the frames it has)."""
        if not isinstance(self.source, NativeFrames):
            return False
        self.native = on
        self.source.show_native_frames(on)
        self.on_time_mode()
        return True

    def action_all_threads(self) -> None:
        if self.thread is not None:
            self.select_thread(None)

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
        if snapshot is not None:
            self.on_new_snapshot(snapshot)

    def on_source_failed(self, message: SourceFailed) -> None:
        self._fail(message.error)

    def _handle_exception(self, error: Exception) -> None:
        """Textual's hook for an exception nothing handled: the app ends (Textual
        prints the traceback); log it too, and remember it for a non-zero exit."""
        if self.crash is None:
            where = log_exception("the app crashed", error)
            self.crash = f"internal error: the app crashed: {error!r} ({where}; please report it)"
        super()._handle_exception(error)

    def _fail(self, error: BpftopError) -> None:
        self.error = error
        self.exit(return_code=error.exit_code)
