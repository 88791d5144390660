"""Where the app's snapshots come from: the ``SnapshotSource`` protocols.

Owns :class:`SnapshotSource` (start with two callbacks, stop), and what a
source may also do: take the app's commands (:class:`ControlledSource`) and
change the probe live (:class:`ProbeSwitching`). A real source (the
collector) runs a background thread and calls ``on_snapshot`` / ``on_error``
from it; ``StaticSource`` posts one saved profile; the tests' ``FakeSource``
(tests/tui/fake_source.py) decides exactly which snapshot arrives when. No
Textual here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from bpftop.base.errors import BpftopError
from bpftop.tui.model.snapshot import Snapshot
from bpftop.tui.model.timemode import TimeSetting

SnapshotCallback = Callable[[Snapshot], None]
ErrorCallback = Callable[[BpftopError], None]


class SnapshotSource(Protocol):
    """Produces snapshots on a background thread until stopped."""

    def start(self, on_snapshot: SnapshotCallback, on_error: ErrorCallback) -> None:
        """Start the background thread; the callbacks are called from it."""
        ...

    def stop(self) -> None:
        """Stop, join the thread and release kernel resources; idempotent."""
        ...


@runtime_checkable
class ControlledSource(Protocol):
    """A source that takes commands from the app (called on the app thread).

    Both only ask: the source applies them on its own thread before its next
    snapshot (``timemode.Commands`` does the hand-over) and then posts one.
    """

    def reset(self) -> None:
        """Forget every count collected so far."""
        ...

    def set_time_mode(self, setting: TimeSetting) -> None:
        """Build the next snapshots in this time mode (cumulative / window / decay)."""
        ...

    def select_thread(self, tid: int | None) -> None:
        """Build the next snapshots' tree and table from one thread (None: all)."""
        ...

    def show_source_lines(self, on: bool) -> None:
        """Give frames ``file:line`` from DWARF from now on (costly: only when shown)."""
        ...


@runtime_checkable
class ProbeSwitching(Protocol):
    """A source that can change the probe live (the collector)."""

    def switch_probe(self, text: str) -> None:
        """Attach this probe spec instead; the answer comes in ``Snapshot.probe_message``."""
        ...


@runtime_checkable
class ShortNames(Protocol):
    """A source that can name C++ functions short or in full (the collector)."""

    short_names: bool

    def use_short_names(self, on: bool) -> None:
        """Name C++ functions without parameters and return type (or in full)
        from now on; counts start again."""
        ...


@runtime_checkable
class NativeFrames(Protocol):
    """A source that can show native frames only for Python stacks (the collector)."""

    def show_native_frames(self, on: bool) -> None:
        """Build the next snapshots from native frames only (the interpreter's own
        where Python frames were merged in), or from the merged stacks again."""
        ...
