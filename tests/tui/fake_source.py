"""A snapshot source for tests, the screenshot script and the TUI bench.

Owns :class:`FakeSource`: it implements the protocols of
:mod:`bpftop.tui.collect.snapshot_source` (and probe switching), delivers the
snapshots a test pushes, when it pushes them, and records every command the
app sent. No kernel, no collector thread.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence

from bpftop.base.errors import BpftopError
from bpftop.tui.collect.snapshot_source import ErrorCallback, SnapshotCallback
from bpftop.tui.model.snapshot import Snapshot
from bpftop.tui.model.timemode import TimeSetting


class FakeSource:
    """Replays snapshots on demand.

    ``snapshots`` are delivered on ``start``; ``push`` and ``fail`` deliver
    more later. With ``threaded=False`` (the default) delivery happens in the
    calling thread, so tests are deterministic; with ``threaded=True`` a
    worker thread delivers, as a real source would (``drain`` waits for it).
    """

    def __init__(self, snapshots: Sequence[Snapshot] = (), *, threaded: bool = False) -> None:
        self._initial = tuple(snapshots)
        self._threaded = threaded
        self._on_snapshot: SnapshotCallback | None = None
        self._on_error: ErrorCallback | None = None
        self._queue: queue.Queue[Snapshot | BpftopError | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.started = False
        self.stopped = False
        self.stop_calls = 0
        self.resets = 0
        self.modes: list[TimeSetting] = []
        self.threads: list[int | None] = []
        self.source_lines: list[bool] = []
        self.short_names = False
        self.short_name_requests: list[bool] = []
        self.probe_switches: list[str] = []

    def start(self, on_snapshot: SnapshotCallback, on_error: ErrorCallback) -> None:
        self._on_snapshot = on_snapshot
        self._on_error = on_error
        self.started = True
        if self._threaded:
            self._thread = threading.Thread(target=self._run, name="fake-source", daemon=True)
            self._thread.start()
        for snapshot in self._initial:
            self.push(snapshot)

    def push(self, snapshot: Snapshot) -> None:
        """Deliver one snapshot (ignored before ``start`` or after ``stop``)."""
        self._deliver(snapshot)

    def fail(self, error: BpftopError) -> None:
        """Report an error as the collector would."""
        self._deliver(error)

    def reset(self) -> None:
        """Counted; tests push the snapshot a real source would send next."""
        self.resets += 1

    def set_time_mode(self, setting: TimeSetting) -> None:
        self.modes.append(setting)

    def select_thread(self, tid: int | None) -> None:
        self.threads.append(tid)

    def show_source_lines(self, on: bool) -> None:
        self.source_lines.append(on)

    def use_short_names(self, on: bool) -> None:
        self.short_names = on
        self.short_name_requests.append(on)

    def switch_probe(self, text: str) -> None:
        self.probe_switches.append(text)

    def drain(self, timeout_s: float = 5.0) -> None:
        """Wait until the worker thread has delivered everything pushed."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.001)

    def stop(self) -> None:
        self.stop_calls += 1
        if self.stopped:
            return
        self.stopped = True
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _deliver(self, item: Snapshot | BpftopError) -> None:
        if not self.started or self.stopped:
            return
        if self._threaded:
            self._queue.put(item)
        else:
            self._dispatch(item)

    def _dispatch(self, item: Snapshot | BpftopError) -> None:
        if isinstance(item, BpftopError):
            if self._on_error is not None:
                self._on_error(item)
        elif self._on_snapshot is not None:
            self._on_snapshot(item)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._dispatch(item)
            finally:
                self._queue.task_done()
