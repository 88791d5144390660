"""The six views of a snapshot, one of them on screen.

Owns the view widgets (Top, call tree, callers, flame graph, diagnostics,
threads), which one is on screen, drawing it (each view takes the same
:class:`~bpftop.tui.views.shown.Shown`: the snapshot, what the app derived
from it, the user's choices), and switching views so that the new one
follows the selection. Only the view on screen is drawn; the others catch up
when switched to.
"""

from __future__ import annotations

from typing import cast

from textual.widget import Widget
from textual.widgets import ContentSwitcher

from bpftop.tui.model.store import NodeKey
from bpftop.tui.model.viewstate import Derived
from bpftop.tui.views.callers import CallersView
from bpftop.tui.views.calltree import CallTreeView
from bpftop.tui.views.diagnostics import DiagnosticsView
from bpftop.tui.views.flame import FlameView
from bpftop.tui.views.navigation import TITLES, VIEWS
from bpftop.tui.views.shown import Shown, View
from bpftop.tui.views.threads import ThreadsView
from bpftop.tui.views.top import TopView

Selecting = TopView | CallTreeView | FlameView
"""Views with a selected function: search jumps move it, the other views follow it."""


class ViewSwitcher(ContentSwitcher):
    """The views, by the ids in ``navigation.VIEWS``; the call tree shows first."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            TopView(id="top"),
            CallTreeView(id="tree"),
            CallersView(id="callers"),
            FlameView(id="flame"),
            DiagnosticsView(id="diag"),
            ThreadsView(id="threads"),
            initial="tree",
            id=id,
        )

    def on_mount(self) -> None:
        for view_id, title in TITLES.items():
            self.query_one(f"#{view_id}").border_title = title

    # -- the views ------------------------------------------------------------
    @property
    def view_id(self) -> str:
        """The id of the view on screen (one of ``navigation.VIEWS``)."""
        return self.current or "tree"

    @property
    def index(self) -> int:
        """The position of the view on screen in ``navigation.VIEWS``."""
        return [v for v, _ in VIEWS].index(self.view_id)

    @property
    def on_screen(self) -> Widget:
        return self.query_one(f"#{self.view_id}")

    @property
    def top_view(self) -> TopView:
        return self.query_one("#top", TopView)

    @property
    def tree_view(self) -> CallTreeView:
        return self.query_one("#tree", CallTreeView)

    @property
    def callers_view(self) -> CallersView:
        return self.query_one("#callers", CallersView)

    @property
    def flame_view(self) -> FlameView:
        return self.query_one("#flame", FlameView)

    @property
    def selecting(self) -> Selecting | None:
        """The view on screen, if it has a selected function."""
        view = self.on_screen
        return view if isinstance(view, Selecting) else None

    # -- switching ------------------------------------------------------------
    def selected_key(self) -> NodeKey | None:
        """The function the view on screen has selected, for the others to follow
        (not the callers view's: its rows are callers of the selection)."""
        view = self.selecting
        return None if view is None or view is self.callers_view else view.selected_key()

    def show_view(self, view_id: str, follow: NodeKey | None) -> None:
        """Put ``view_id`` on screen, focused, with ``follow`` selected in it."""
        self.current = view_id
        view = self.on_screen
        # Focus and follow first: the view is then drawn once, focused, on the selection.
        self.screen.set_focus(view, scroll_visible=False)
        if follow is not None and isinstance(view, Selecting) and view is not self.callers_view:
            view.follow(follow)

    # -- drawing --------------------------------------------------------------
    def track_functions(self, derived: Derived, unit: str) -> None:
        """Give the Top view a new tick's functions (its trend markers compare
        tick to tick, so it follows every tick; it sorts them only when shown)."""
        shown = self.view_id == "top"
        self.top_view.update_functions(derived.hot, derived.tree.total_count, fill=shown, unit=unit)

    def draw(self, shown: Shown) -> None:
        """Draw the view on screen from ``shown`` (every view takes the same)."""
        cast(View, self.on_screen).show(shown)
