"""What the user chose to look at, shared by every view: selection, zoom, search.

``ViewState`` holds the selected function, the zoom stack (paths into the
call tree, shared by the tree and the flame graph), the search regex with
its filter switch, the kernel/user frame filter, how the function table
groups inline frames and the diff baseline;
``derive`` turns a snapshot's tree into what the views show. It caches the
derived values per tree, so switching views or pressing keys costs nothing
when no new snapshot arrived. No Textual here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bpftop.symbols.python.code import is_python_frame
from bpftop.tui.model.array_tree import array_tree
from bpftop.tui.model.baseline import Baseline
from bpftop.tui.model.derived import (
    Match,
    NodePath,
    filter_tree,
    has_inlined,
    hot_by_symbol,
    hot_from_tree,
    keep_frames,
    rename_frames,
)
from bpftop.tui.model.idle import drop_idle, has_idle
from bpftop.tui.model.node_paths import (
    by_function,
    chain_to,
    compile_search,
    node_at,
    regrouped_path,
)
from bpftop.tui.model.snapshot import CallNode, HotFunction
from bpftop.tui.model.store import NodeKey

FRAME_FILTERS: dict[str, Match | None] = {
    "all": None,
    "user": lambda node: not node.kernel,
    "kernel": lambda node: node.kernel,
    "python": lambda node: is_python_frame(node.label, node.module),
}
"""Which frames the views show: all, user frames only (``K``), kernel frames only
(``U``), Python frames only (``P``: py-spy's view of a Python process)."""
SYNC_GROUPING_NODES = 50_000
"""Up to this many nodes the function table is grouped by symbol on the app thread
(``hot_by_symbol``, ~60 ns a node: a few ms); a bigger tree with inline frames is
grouped on the derive worker (423k nodes: ~25-80 ms)."""
Wanted = tuple[bool, str, str, bool, bool, bool]
"""What a derived view depends on besides the snapshot (``ViewState.wanted``)."""


@dataclass(frozen=True, slots=True)
class Derived:
    """The tree and the function table the views show for one snapshot."""

    tree: CallNode
    hot: tuple[HotFunction, ...]
    idle_hidden: int = 0  # idle samples (or their ns) left out (tui/model/idle.py)


def derive_view(
    tree: CallNode,
    hot: tuple[HotFunction, ...],
    frames: str,
    match: Match | None,
    inline_rows: bool = False,
    python_functions: bool = False,
    show_idle: bool = False,
    *,
    by_symbol: tuple[HotFunction, ...] | None = None,
) -> Derived:
    """What the views show: Python frames by function if ``python_functions``
    (else by line), ``frames`` kept (see FRAME_FILTERS), then only the
    stacks ``match`` finds. ``hot`` is the snapshot's table (inline frames as
    rows); unless ``inline_rows``, the table groups inline frames into the
    function they were inlined into: ``by_symbol`` when given (the profile's
    own, ``Profile.hot_functions``) and the tree is shown as it is, else
    ``hot_by_symbol``. Idle samples are left out first unless ``show_idle``.
    Pure, so it may run on a worker thread."""
    shown, hidden = (tree, 0) if show_idle else drop_idle(tree)
    if hidden:
        job = (frames, match, inline_rows, python_functions, True)
        return _with_idle(derive_view(shown, (), *job), hidden)
    regroup = python_functions and has_python_lines(tree)
    shown = rename_frames(tree, by_function) if regroup else tree
    keep = FRAME_FILTERS[frames]
    shown = keep_frames(shown, keep) if keep is not None else shown
    if match is not None:
        shown = filter_tree(shown, match) or CallNode(tree.label)
    if not inline_rows and shown is tree and by_symbol is not None:
        return Derived(shown, by_symbol)
    if not inline_rows and has_inlined(shown):
        return Derived(shown, hot_by_symbol(shown, 500))
    return Derived(shown, hot if shown is tree else hot_from_tree(shown, 500))


_LINES_SCANNED: dict[int, tuple[list[NodeKey], int, bool]] = {}
"""Per key list (append-only, shared by a profile's snapshots): keys looked at, and
whether one had a line. Holding the list keeps its id from being reused."""


def has_python_lines(tree: CallNode) -> bool:
    """Whether grouping Python frames by function changes anything: a key with a line.
    The tree's distinct keys are looked at, not its nodes, and a profile's keys
    (append-only) only once each, so a tick costs its new keys."""
    keys = array_tree(tree).keys
    held, scanned, found = _LINES_SCANNED.get(id(keys), (keys, 0, False))
    if held is not keys:
        scanned, found = 0, False
    if not found and scanned < len(keys):
        found = any(by_function(key) != key for key in keys[scanned:])
    _LINES_SCANNED.pop(id(keys), None)
    _LINES_SCANNED[id(keys)] = (keys, len(keys), found)
    while len(_LINES_SCANNED) > 8:
        del _LINES_SCANNED[next(iter(_LINES_SCANNED))]
    return found


def _with_idle(derived: Derived, hidden: int) -> Derived:
    hot = derived.hot or hot_from_tree(derived.tree, 500)
    return Derived(derived.tree, hot, hidden)


class ViewState:
    """The user's choices; the app owns one and only touches it on its thread."""

    def __init__(self) -> None:
        self.selected: NodeKey | None = None
        self.zoom: list[NodePath] = []
        self.pattern = ""
        self.regex: re.Pattern[str] | None = None
        self.match: Match | None = None
        self.filtering = False
        self.baseline: Baseline | None = None
        self.frames = "all"
        self.inline_rows = False  # the function table: inline frames as rows of their own
        self.python_functions = True  # Python frames by function (py-spy top's), not by line
        self.show_idle = False  # idle samples shown (tui/model/idle.py; --idle, I)
        self.idle_applies = False  # the shown probe's samples can be idle (offcpu)
        self.idle_hidden = 0  # what the last derived view left out as idle
        self._cache: tuple[CallNode, Wanted, Derived] | None = None

    # -- zoom -----------------------------------------------------------------
    @property
    def zoom_path(self) -> NodePath:
        return self.zoom[-1] if self.zoom else ()

    def zoom_in(self, path: NodePath) -> bool:
        """Push ``path`` (ignored when it is the current zoom or the root)."""
        if not path or path == self.zoom_path:
            return False
        self.zoom.append(path)
        return True

    def zoom_out(self) -> bool:
        if not self.zoom:
            return False
        self.zoom.pop()
        return True

    def carry_zoom(self, tree: CallNode) -> None:
        """Zoom paths gone from ``tree`` that are in it with Python frames grouped
        the other way (``G``) follow the regrouping."""
        for n, path in enumerate(self.zoom):
            if node_at(tree, path) is None:
                moved = regrouped_path(tree, path)
                if moved is not None and len(moved) == len(path):
                    self.zoom[n] = moved

    def breadcrumb(self, tree: CallNode) -> list[str]:
        """Labels from the root to the zoomed node (as far as it still exists)."""
        path = self.zoom_path
        labels = [tree.label]
        for n in range(1, len(path) + 1):
            node = node_at(tree, path[:n])
            if node is None:
                break
            labels.append(node.label)
        return labels

    # -- search ---------------------------------------------------------------
    def set_search(self, pattern: str) -> str | None:
        """Set (or with "" clear) the search; returns an error text for a bad regex."""
        if not pattern:
            self.pattern, self.regex, self.match, self.filtering = "", None, None, False
            return None
        compiled = compile_search(pattern)
        if isinstance(compiled, str):
            return compiled
        self.pattern, self.regex = pattern, compiled
        search = compiled.search
        self.match = lambda node: search(node.label) is not None
        return None

    def toggle_filter(self) -> bool:
        """Filter mode on/off; only with a search. Returns the new state."""
        self.filtering = not self.filtering and self.match is not None
        return self.filtering

    # -- deriving -------------------------------------------------------------
    def toggle_frames(self, only: str) -> str:
        """Show ``only`` those frames (a ``FRAME_FILTERS`` name); asked again: all."""
        self.frames = "all" if self.frames == only else only
        return self.frames

    def toggle_inline_rows(self) -> bool:
        """Inline frames as rows of the function table, or in their function; the new state."""
        self.inline_rows = not self.inline_rows
        return self.inline_rows

    def toggle_python_functions(self) -> bool:
        """Python frames by function (py-spy top's default), or by line; the new state."""
        self.python_functions = not self.python_functions
        return self.python_functions

    def toggle_idle(self) -> bool:
        """Idle samples shown or hidden; the new state."""
        self.show_idle = not self.show_idle
        return self.show_idle

    @property
    def wanted(self) -> Wanted:
        """What a derived view depends on besides the snapshot."""
        shown = (self.filtering, self.pattern, self.frames, self.inline_rows)
        return (*shown, self.python_functions, self.keep_idle)

    @property
    def keep_idle(self) -> bool:
        """Idle samples stay: shown (``I``), or the probe's samples cannot be idle."""
        return self.show_idle or not self.idle_applies

    @property
    def plain(self) -> bool:
        """True when the views show the snapshot as it is (deriving costs nothing)."""
        searched = self.filtering and self.match is not None
        return self.frames == "all" and not searched

    def cheap(self, tree: CallNode, grouped: bool = False) -> bool:
        """True when deriving ``tree`` for the current choices costs next to nothing,
        so the app thread may do it: the snapshot as it is (``plain``), with a table
        that needs no grouping by symbol (``i``, ``grouped``: the snapshot has it,
        or no inline frames) or a small tree."""
        if not self.keep_idle and has_idle(tree):
            return False
        if self.python_functions and has_python_lines(tree):
            return False
        if not self.plain or self.inline_rows or grouped:
            return self.plain
        return array_tree(tree).size <= SYNC_GROUPING_NODES or not has_inlined(tree)

    def cached(self, tree: CallNode) -> Derived | None:
        """The derived view of ``tree`` for the current choices, if already made."""
        cached = self._cache
        if cached is not None and cached[0] is tree and cached[1] == self.wanted:
            return cached[2]
        return None

    def remember(self, tree: CallNode, wanted: Wanted, derived: Derived) -> None:
        self._cache = (tree, wanted, derived)
        self.idle_hidden = derived.idle_hidden

    def derive_job(self) -> tuple[str, Match | None, bool, bool, bool]:
        """The arguments of :func:`derive_view` for the current choices."""
        match = self.match if self.filtering else None
        return self.frames, match, self.inline_rows, self.python_functions, self.keep_idle

    def derive(
        self,
        tree: CallNode,
        hot: tuple[HotFunction, ...],
        by_symbol: tuple[HotFunction, ...] | None = None,
    ) -> Derived:
        """The (frame-filtered, search-filtered) tree and table; cached while unchanged."""
        derived = self.cached(tree)
        if derived is None:
            derived = derive_view(tree, hot, *self.derive_job(), by_symbol=by_symbol)
            self.remember(tree, self.wanted, derived)
        return derived

    def export_tree(self, tree: CallNode) -> CallNode:
        """What ``w`` writes: the zoomed branch of the (filtered) tree."""
        return chain_to(tree, self.zoom_path) if self.zoom else tree
