"""What every view is drawn from, and the one method each view has for it.

Owns :class:`Shown` (the snapshot on screen, what the app derived from it for
the user's choices, those choices, file:line on or off, the thread shown)
and the :class:`View` protocol: every view takes a :class:`Shown` in
:meth:`View.show` and draws what it needs of it, so the app's switcher has no
branch per view. :func:`placeholder_text` is what an empty view says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bpftop.tui.model.snapshot import CallNode, Phase, Snapshot
from bpftop.tui.model.viewstate import Derived, ViewState

_EMPTY = CallNode("all")


@dataclass(frozen=True, slots=True)
class Shown:
    """One drawing's input, the same for every view."""

    snapshot: Snapshot | None
    """The snapshot on screen (None: none yet)."""
    derived: Derived | None
    """What the app derived from it for the user's choices (None: being made)."""
    state: ViewState
    """The selection, zoom, search and baseline, shared by every view."""
    show_lines: bool = False
    """file:line beside function names (``L``)."""
    thread: int | None = None
    """The one thread every view shows (None: all)."""

    @property
    def tree(self) -> CallNode:
        """The call tree to draw (an empty one while nothing is derived)."""
        return self.derived.tree if self.derived is not None else _EMPTY

    @property
    def unit(self) -> str:
        """``ns`` when the counts are time, else ""."""
        return self.snapshot.weight_unit if self.snapshot is not None else ""

    @property
    def placeholder(self) -> str:
        """What an empty view says."""
        return placeholder_text(self.snapshot)


class View(Protocol):
    """A view of the snapshot: everything it draws comes from :meth:`show`."""

    def show(self, shown: Shown) -> None:
        """Draw ``shown`` (only what this view needs of it; cheap when unchanged)."""
        ...


def placeholder_text(snapshot: Snapshot | None) -> str:
    """What the empty tree says."""
    if snapshot is None or snapshot.phase is Phase.STARTING:
        return "starting…"
    if snapshot.phase is Phase.COMPILING:
        return "compiling BPF program… the first samples arrive once it is loaded"
    if snapshot.phase is Phase.EXITED:
        return "process exited before any sample was taken"
    return "no samples yet"
