"""A snapshot source that never changes: one snapshot of a saved profile.

``bpftop view`` and ``bpftop diff`` feed the live app from it; it posts its
snapshot once on ``start`` and holds no thread and no kernel resource. It is
not a ``ControlledSource``: reset, time modes and thread choice say so.
"""

from __future__ import annotations

from bpftop.tui.collect.snapshot_source import ErrorCallback, SnapshotCallback
from bpftop.tui.model.snapshot import Snapshot


class StaticSource:
    """A :class:`~bpftop.tui.collect.snapshot_source.SnapshotSource` over one fixed snapshot."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.stopped = False

    def start(self, on_snapshot: SnapshotCallback, on_error: ErrorCallback) -> None:
        on_snapshot(self.snapshot)

    def stop(self) -> None:
        self.stopped = True
