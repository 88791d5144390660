"""The Callers view: the bottom-up tree of the selected function.

Building it (``model.callers``) makes passes over every node of the call
tree's arrays, up to tens of milliseconds at profiler scale, so builds run on
a :class:`~bpftop.tui.widgets.background.Background` worker: the view keeps
showing the previous result until the new one arrives.
"""

from __future__ import annotations

from bpftop.tui.model.callers_tree import callers_tree
from bpftop.tui.model.derived import Match
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.store import NodeKey
from bpftop.tui.views.calltree import CallTreeView
from bpftop.tui.views.shown import Shown
from bpftop.tui.widgets.background import Background

Built = tuple[CallNode, NodeKey, CallNode]
"""A finished build: the tree and function it was made for, and the callers tree."""


def build(tree: CallNode, key: NodeKey) -> Built:
    return tree, key, callers_tree(tree, key)


class CallersView(CallTreeView):
    """A call-tree view of ``callers_tree(tree, key)``, rebuilt as snapshots arrive."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.open_depth = 3
        self.following_hot = False  # its rows are the selection's callers: nothing to follow
        self.own_ends_paths = False  # own: the function's leaf samples, on every row of a path
        self._built_for: tuple[CallNode, NodeKey] | None = None
        self._wanted: NodeKey | None = None
        self._builds: Background[Built] | None = None

    @property
    def builds(self) -> Background[Built]:
        if self._builds is None:
            self._builds = Background(self.app, "callers")
        return self._builds

    def show(self, shown: Shown) -> None:
        """The callers of the selected function in ``shown``'s tree."""
        state = shown.state
        self.show_callers(shown.tree, state.selected, state.match, shown.show_lines)

    def show_callers(
        self,
        tree: CallNode,
        key: NodeKey | None,
        match: Match | None,
        show_lines: bool,
    ) -> None:
        """Show the callers of ``key`` in ``tree`` (now, or when the worker is done)."""
        self.set_options(match=match, show_lines=show_lines)
        self._wanted = key
        if key is None:
            self.set_placeholder("select a function in another view first (Tab, 1-4)")
            self._built_for = None
            self.set_tree(CallNode("callers"))
            return
        built = self._built_for
        if built is not None and built[0] is tree and built[1] == key:
            return
        job = (id(tree), key)
        result = self.builds.submit(job, lambda: build(tree, key), self._apply)
        if result is not None:
            self._apply(result)

    def on_unmount(self) -> None:
        if self._builds is not None:
            self._builds.close()

    def _apply(self, built: Built) -> None:
        tree, key, result = built
        if key != self._wanted:
            return
        self._built_for = (tree, key)
        self.set_placeholder(f"no samples of {key[0]}")
        if result.children and (not self.cursor_path or self.cursor_path[0] != key):
            self._open_to((result.children[0].key,))  # a new function: select it, same rebuild
        self.set_tree(result)
