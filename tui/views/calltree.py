"""The top-down call tree as a Line-API widget.

Only visible rows exist: the model's immutable ``CallNode`` tree is
flattened along expanded nodes into a row list, and ``render_line`` draws
the rows in view. Expansion state and the cursor are keyed by node path
(the sibling keys from the top), so both survive every new snapshot.

The tree opens on the hottest path (``node_paths.hot_chain``: as far as a
step is worth taking), the cursor on its end, and keeps that path open on each
new snapshot until the user moves the cursor, expands or collapses anything,
zooms, or selects from another view. Fresh data never moves the cursor: only
a selection that is gone (a probe switch, a reset) is placed again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from textual.binding import Binding, BindingType
from textual.message import Message

from bpftop.tui.model.baseline import Baseline, delta_style, format_delta
from bpftop.tui.model.derived import Match, NodePath, hottest_path_of
from bpftop.tui.model.flame_layout import is_unnamed
from bpftop.tui.model.node_paths import HOT_MIN_PCT, hot_chain, node_at, regrouped_path
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.store import NodeKey
from bpftop.tui.views.shown import Shown
from bpftop.tui.widgets.line import Line
from bpftop.tui.widgets.rows_view import RowsView

MODULE_WIDTH = 26
LABEL_FIRST = 48
"""Cells names get before the module column gets any (it takes what is left, up to
``MODULE_WIDTH``; under ``MODULE_MIN`` cells it is left out)."""
MODULE_MIN = 6


def module_name(module: str) -> str:
    """A module's display name (the basename of a file path)."""
    return module.rsplit("/", 1)[-1] if module.startswith("/") else module


def _carried(tree: CallNode, path: NodePath) -> NodePath:
    """``path``, or where it is in ``tree`` with Python frames grouped the other way."""
    if node_at(tree, path) is not None:
        return path
    moved = regrouped_path(tree, path)
    return moved if moved is not None and len(moved) == len(path) else path


@dataclass(frozen=True, slots=True)
class TreeRow:
    """One visible row."""

    node: CallNode
    path: NodePath
    depth: int
    expanded: bool


class CallTreeView(RowsView):
    """Renders visible rows of a call tree; keyboard-driven."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right,l", "expand", "Expand"),
        Binding("left,h", "collapse", "Collapse"),
        Binding("plus,equals_sign", "toggle_node", "Toggle", key_display="+"),
        Binding("enter", "activate", "Zoom"),
        Binding("e", "expand_hot_path", "Hot path"),
    ]

    class Activated(Message):
        """Enter on a row: the app zooms (tree) or selects (callers)."""

        def __init__(self, view: CallTreeView, path: NodePath, node: CallNode) -> None:
            super().__init__()
            self.view = view
            self.path = path
            self.node = node

    COMPONENT_CLASSES: ClassVar[set[str]] = {"calltree--pct", "calltree--unresolved"}

    DEFAULT_CSS = """
    CallTreeView > .calltree--pct { color: $text-accent; }
    CallTreeView > .calltree--unresolved { color: $text-error; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._tree = CallNode("all")
        self._expanded: dict[NodePath, bool] = {}
        self._rows: list[TreeRow] = []
        self._cursor_path: NodePath | None = None
        self._root_path: NodePath = ()
        self._follow: NodeKey | None = None  # a function to select at the next set_tree
        self.match: Match | None = None
        self.show_lines = False
        self.open_depth = 1
        self.following_hot = True
        """Re-open the hottest path on every new tree, until the user takes over."""
        self.hot_min_pct = HOT_MIN_PCT
        self.own_ends_paths = True  # a node's own samples are the stacks that end there
        """The hot path opens no child under this share of the whole tree (percent)."""
        self.decorate: Callable[[CallNode, NodePath], Line | None] | None = None
        """Optional extra column after the percentages (the baseline diff)."""

    # -- state ---------------------------------------------------------------
    @property
    def rows(self) -> list[TreeRow]:
        return self._rows

    @property
    def row_count(self) -> int:
        return len(self._rows)

    def cursor_moved(self) -> None:
        self._cursor_path = self._rows[self._cursor].path
        self.following_hot = False  # only a user (or a search jump) moves the cursor

    @property
    def cursor_path(self) -> NodePath | None:
        return self._cursor_path

    @property
    def call_tree(self) -> CallNode:
        return self._tree

    def is_expanded(self, path: NodePath) -> bool:
        """Rows down to ``open_depth`` start expanded; the others collapsed."""
        return self._expanded.get(path, len(path) <= self.open_depth)

    @property
    def root_path(self) -> NodePath:
        return self._root_path

    def set_tree(self, tree: CallNode, root_path: NodePath = ()) -> None:
        """Show a new tree (zoomed to ``root_path``); expansion and selection are
        kept, or the selection follows the function ``follow`` asked for."""
        self._tree = tree
        self._carry_paths(tree)
        self._root_path = root_path if node_at(tree, root_path) is not None else ()
        key, self._follow = self._follow, None
        if key is not None and self.selected_key() != key:
            zoom = node_at(tree, self._root_path)
            found = None if zoom is None else hottest_path_of(zoom, key)
            if found is not None:
                self._open_to(self._root_path + found)
        elif self.following_hot:
            zoom = node_at(tree, self._root_path)
            if zoom is not None and zoom.children:
                self._expanded.clear()  # only hot paths were opened: the user opened nothing
                hot = self._open_hot_path(zoom, self._root_path)
                selected = self._cursor_path
                if not selected or node_at(tree, selected) is None:
                    self._cursor_path = hot  # the first data, or the selection is gone
                else:
                    self._open_to(selected)  # the selection stays where it is, and shown
        self._rebuild()

    def _carry_paths(self, tree: CallNode) -> None:
        """Paths gone from ``tree`` whose frames are in it grouped the other way
        (Python frames by line or by function, ``G``) are carried over, so a
        regrouping keeps the expanded rows and the cursor on the same code."""
        carried: dict[NodePath, bool] = {}
        for path, on in self._expanded.items():
            carried.setdefault(_carried(tree, path), on)
        cursor = self._cursor_path
        if cursor and cursor != (moved := _carried(tree, cursor)):
            self._cursor_path = moved
            for n in range(1, len(moved)):  # shown where it was: under its open callers
                carried[moved[:n]] = True
        self._expanded = carried

    def show(self, shown: Shown) -> None:
        """``shown``'s tree from its zoom, with its search, file:line and baseline."""
        state = shown.state
        diff = state.baseline is not None
        self.decorate = delta_decorator(state.baseline, self) if diff else None
        columns = "total %  self %  Δself  Δtotal" if diff else "total %  self %"
        self.border_title = f"Call tree (top-down): {columns}  function  module"
        self.set_placeholder(shown.placeholder)
        self.set_options(match=state.match, show_lines=shown.show_lines)
        self.set_tree(shown.tree, state.zoom_path)

    def set_options(self, *, match: Match | None, show_lines: bool) -> None:
        """Search highlighting and the file:line column."""
        if match is not self.match or show_lines != self.show_lines:
            self.match, self.show_lines = match, show_lines
            self.redraw()

    def selected_key(self) -> NodeKey | None:
        row = self._current()
        return None if row is None or len(row.path) < 2 else row.node.key

    def reveal(self, path: NodePath) -> bool:
        """Expand the ancestors of ``path`` and select it."""
        if path[: len(self._root_path)] != self._root_path:
            return False
        self.following_hot = False
        self._open_to(path)
        self._rebuild()
        return self._cursor_path == path

    def _open_to(self, path: NodePath) -> None:
        for n in range(len(self._root_path) + 1, len(path)):
            self._expanded[path[:n]] = True
        self._cursor_path = path

    def follow(self, key: NodeKey) -> None:
        """Select the hottest occurrence of a function (another view's selection)
        in the tree ``set_tree`` shows next: one rebuild, not two."""
        self._follow = key
        self.following_hot = False

    def set_placeholder(self, text: str) -> None:
        if text != self.placeholder:
            self.placeholder = text
            self.redraw()

    def _rebuild(self) -> None:
        rows: list[TreeRow] = []
        zoom = node_at(self._tree, self._root_path) if self._root_path else None
        if zoom is not None:
            rows.append(TreeRow(zoom, self._root_path, 0, zoom.has_children))
            self._flatten(zoom, self._root_path, 0, rows)
        else:
            self._flatten(self._tree, (), -1, rows)
        self._rows = rows
        self._cursor = self._find_cursor()
        self._cursor_path = rows[self._cursor].path if rows else self._cursor_path
        self.rows_changed()

    def _flatten(self, node: CallNode, path: NodePath, depth: int, out: list[TreeRow]) -> None:
        """Append the rows below ``node`` in preorder, into expanded nodes only. Iterative
        (a stack of child iterators): a stack deeper than Python's recursion limit is fine."""
        pending = [(iter(node.children), path, depth + 1)]
        while pending:
            children, parent, level = pending[-1]
            child = next(children, None)
            if child is None:
                pending.pop()
                continue
            child_path = (*parent, child.key)
            expanded = child.has_children and self.is_expanded(child_path)
            out.append(TreeRow(child, child_path, level, expanded))
            if expanded:
                pending.append((iter(child.children), child_path, level + 1))

    def _find_cursor(self) -> int:
        """The row of the selected path, or of its nearest surviving ancestor."""
        path = self._cursor_path
        if not path or not self._rows:
            return 0
        index = {row.path: i for i, row in enumerate(self._rows)}
        for n in range(len(path), 0, -1):
            found = index.get(path[:n])
            if found is not None:
                return found
        return 0

    # -- cursor movement ------------------------------------------------------
    def select_path(self, path: NodePath) -> bool:
        for i, row in enumerate(self._rows):
            if row.path == path:
                self.move_cursor(i)
                return True
        return False

    # -- expansion ------------------------------------------------------------
    def _current(self) -> TreeRow | None:
        return self._rows[self._cursor] if self._rows else None

    def action_expand(self) -> None:
        self.following_hot = False
        row = self._current()
        if row is not None and row.node.has_children and not row.expanded:
            self._expanded[row.path] = True
            self._rebuild()

    def action_collapse(self) -> None:
        self.following_hot = False
        row = self._current()
        if row is None:
            return
        if row.expanded:
            self._expanded[row.path] = False
            self._rebuild()
        elif len(row.path) > 1:
            self.select_path(row.path[:-1])

    def action_activate(self) -> None:
        self.following_hot = False
        row = self._current()
        if row is not None:
            self.post_message(self.Activated(self, row.path, row.node))

    def action_toggle_node(self) -> None:
        self.following_hot = False
        row = self._current()
        if row is not None and row.node.has_children and row.path != self._root_path:
            self._expanded[row.path] = not row.expanded
            self._rebuild()

    def action_expand_hot_path(self) -> None:
        """Expand from the selected node (or the top) along the hottest children."""
        self.following_hot = False
        row = self._current()
        if row is None:
            return  # no rows: nothing to open
        self._cursor_path = self._open_hot_path(row.node, row.path)
        self._rebuild()

    def _open_hot_path(self, node: CallNode, path: NodePath) -> NodePath:
        """Expand ``node`` (at ``path``) and its hottest child, and theirs, as far
        as ``hot_chain`` goes (shares of the whole tree); the path of its end.
        The synthetic root is never a row: from it, the first process at least."""
        total = max(1, self._tree.total_count)
        chain = hot_chain(node, total, self.hot_min_pct, own_stops=self.own_ends_paths)
        if not path and not chain and node.children:
            chain = (node.children[0].key,)
        for n in range(len(chain)):
            if path or n:
                self._expanded[(*path, *chain[:n])] = True
        return (*path, *chain)

    # -- rendering ------------------------------------------------------------
    def row_line(self, index: int, width: int) -> Line:
        row = self._rows[index]
        node = row.node
        total = max(1, self._tree.total_count)
        pct = f"{100 * node.total_count / total:6.1f}% {100 * node.self_count / total:6.1f}% "
        line = Line().add(pct, self.style_of("calltree--pct"))
        extra = self.decorate(node, row.path) if self.decorate is not None else None
        if extra is not None:
            line.extend(extra)
        module_width = min(MODULE_WIDTH, max(0, width - line.cells - LABEL_FIRST - 1))
        module_width = module_width if module_width >= MODULE_MIN else 0
        label_width = max(1, width - line.cells - module_width - (1 if module_width else 0))
        line.extend(self._label(row).cut(label_width))
        if module_width:
            line.add_fit(
                " " + module_name(node.module), module_width + 1, self.style_of("rows--module")
            )
        return line

    def _label(self, row: TreeRow) -> Line:
        node = row.node
        marker = "▼ " if row.expanded else ("▶ " if node.has_children else "  ")
        label_style: Style | None = None
        if node.kernel:
            label_style = self.style_of("rows--kernel")
        elif is_unnamed(node):
            label_style = self.style_of("calltree--unresolved")
        if self.match is not None and self.match(node):
            matched = self.highlight_of("rows--match")
            label_style = label_style + matched if label_style is not None else matched
        label = Line().add("  " * row.depth + marker).add(node.label, label_style)
        if node.inlined:
            label.add(" (inlined)", self.style_of("rows--source"))
        if self.show_lines and node.source:
            label.add(f"  {node.source}", self.style_of("rows--source"))
        return label


def delta_decorator(
    baseline: Baseline | None, view: CallTreeView
) -> Callable[[CallNode, NodePath], Line | None]:
    """The tree's extra column: Δ self % and Δ total % of each row vs. ``baseline``."""

    def decorate(node: CallNode, path: NodePath) -> Line | None:
        if baseline is None:
            return None
        line = Line()
        for value in baseline.node_delta(node, path, view.call_tree.total_count):
            line.add(format_delta(value), Style.parse(delta_style(value)))
            line.add(" ")
        return line

    return decorate
