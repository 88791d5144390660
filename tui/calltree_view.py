"""The top-down call tree as a Line-API widget.

Only visible rows exist: the model's immutable ``CallNode`` tree is
flattened along expanded nodes into a row list, and ``render_line`` draws
the rows in view. Expansion state and the cursor are keyed by node path
(the sibling keys from the top), so both survive every new snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.views import Match, NodeKey, NodePath, hottest_path_of, node_at

MODULE_WIDTH = 26


def module_name(module: str) -> str:
    """A module's display name (the basename of a file path)."""
    return module.rsplit("/", 1)[-1] if module.startswith("/") else module


@dataclass(frozen=True, slots=True)
class TreeRow:
    """One visible row."""

    node: CallNode
    path: NodePath
    depth: int
    expanded: bool


class CallTreeView(ScrollView, can_focus=True):
    """Renders visible rows of a call tree; keyboard-driven."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
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

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "calltree--cursor",
        "calltree--cursor-blurred",
        "calltree--pct",
        "calltree--kernel",
        "calltree--module",
        "calltree--unresolved",
        "calltree--placeholder",
        "calltree--match",
        "calltree--source",
    }

    DEFAULT_CSS = """
    CallTreeView > .calltree--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }
    CallTreeView > .calltree--cursor-blurred { background: $block-cursor-blurred-background; }
    CallTreeView > .calltree--pct { color: $text-accent; }
    CallTreeView > .calltree--kernel { color: $text-warning; }
    CallTreeView > .calltree--module { color: $text-muted; }
    CallTreeView > .calltree--unresolved { color: $text-error; }
    CallTreeView > .calltree--placeholder { color: $text-muted; text-style: italic; }
    CallTreeView > .calltree--match { background: $warning 40%; text-style: bold underline; }
    CallTreeView > .calltree--source { color: $text-muted; text-style: italic; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._tree = CallNode("all")
        self._expanded: dict[NodePath, bool] = {}
        self._rows: list[TreeRow] = []
        self._cursor = 0
        self._cursor_path: NodePath | None = None
        self._root_path: NodePath = ()
        self.placeholder = "no samples yet"
        self.match: Match | None = None
        self.show_source = False
        self.open_depth = 1
        self.decorate: Callable[[CallNode, NodePath], Text | None] | None = None
        """Optional extra column after the percentages (the baseline diff)."""

    # -- state ---------------------------------------------------------------
    @property
    def rows(self) -> list[TreeRow]:
        return self._rows

    @property
    def cursor(self) -> int:
        return self._cursor

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
        """Show a new tree (zoomed to ``root_path``); expansion and selection are kept."""
        self._tree = tree
        self._root_path = root_path if node_at(tree, root_path) is not None else ()
        self._rebuild()

    def set_options(self, *, match: Match | None, show_source: bool) -> None:
        """Search highlighting and the file:line column."""
        if match is not self.match or show_source != self.show_source:
            self.match, self.show_source = match, show_source
            self.refresh()

    def selected_key(self) -> NodeKey | None:
        row = self._current()
        return None if row is None or len(row.path) < 2 else row.node.key

    def reveal(self, path: NodePath) -> bool:
        """Expand the ancestors of ``path`` and select it."""
        if path[: len(self._root_path)] != self._root_path:
            return False
        for n in range(len(self._root_path) + 1, len(path)):
            self._expanded[path[:n]] = True
        self._cursor_path = path
        self._rebuild()
        return self._cursor_path == path

    def follow(self, key: NodeKey) -> None:
        """Select the hottest occurrence of a function (another view's selection)."""
        if self.selected_key() == key:
            return
        zoom = node_at(self._tree, self._root_path)
        found = None if zoom is None else hottest_path_of(zoom, key)
        if found is not None:
            self.reveal(self._root_path + found)

    def set_placeholder(self, text: str) -> None:
        if text != self.placeholder:
            self.placeholder = text
            self.refresh()

    def _rebuild(self) -> None:
        rows: list[TreeRow] = []
        zoom = node_at(self._tree, self._root_path) if self._root_path else None
        if zoom is not None:
            rows.append(TreeRow(zoom, self._root_path, 0, bool(zoom.children)))
            self._flatten(zoom, self._root_path, 0, rows)
        else:
            self._flatten(self._tree, (), -1, rows)
        self._rows = rows
        self._cursor = self._find_cursor()
        self._cursor_path = rows[self._cursor].path if rows else self._cursor_path
        self.virtual_size = Size(self.size.width, len(rows))
        self._scroll_cursor_visible()
        self.refresh()

    def _flatten(self, node: CallNode, path: NodePath, depth: int, out: list[TreeRow]) -> None:
        for child in node.children:
            child_path = (*path, child.key)
            expanded = bool(child.children) and self.is_expanded(child_path)
            out.append(TreeRow(child, child_path, depth + 1, expanded))
            if expanded:
                self._flatten(child, child_path, depth + 1, out)

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
    def move_cursor(self, row: int) -> None:
        if not self._rows:
            return
        self._cursor = max(0, min(row, len(self._rows) - 1))
        self._cursor_path = self._rows[self._cursor].path
        self._scroll_cursor_visible()
        self.refresh()

    def select_path(self, path: NodePath) -> bool:
        for i, row in enumerate(self._rows):
            if row.path == path:
                self.move_cursor(i)
                return True
        return False

    def _scroll_cursor_visible(self) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_y)
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True)
        elif self._cursor >= top + height:
            self.scroll_to(y=self._cursor - height + 1, animate=False, immediate=True)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self._cursor + 1)

    def action_page_up(self) -> None:
        self.move_cursor(self._cursor - self._page())

    def action_page_down(self) -> None:
        self.move_cursor(self._cursor + self._page())

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self._rows) - 1)

    # -- expansion ------------------------------------------------------------
    def _current(self) -> TreeRow | None:
        return self._rows[self._cursor] if self._rows else None

    def action_expand(self) -> None:
        row = self._current()
        if row is not None and row.node.children and not row.expanded:
            self._expanded[row.path] = True
            self._rebuild()

    def action_collapse(self) -> None:
        row = self._current()
        if row is None:
            return
        if row.expanded:
            self._expanded[row.path] = False
            self._rebuild()
        elif len(row.path) > 1:
            self.select_path(row.path[:-1])

    def action_activate(self) -> None:
        row = self._current()
        if row is not None:
            self.post_message(self.Activated(self, row.path, row.node))

    def action_toggle_node(self) -> None:
        row = self._current()
        if row is not None and row.node.children and row.path != self._root_path:
            self._expanded[row.path] = not row.expanded
            self._rebuild()

    def action_expand_hot_path(self) -> None:
        """Expand from the selected node (or the top) along the hottest children."""
        row = self._current()
        node, path = (row.node, row.path) if row is not None else (self._tree, ())
        if row is None and node.children:
            node = node.children[0]
            path = (node.key,)
        while node.children:
            self._expanded[path] = True
            node = node.children[0]
            path = (*path, node.key)
        self._cursor_path = path
        self._rebuild()

    # -- rendering ------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = y + round(self.scroll_y)
        if not self._rows:
            if y == 0:
                style = self.get_component_rich_style("calltree--placeholder")
                return Strip([Segment(self.placeholder, style)]).crop_extend(0, width, None)
            return Strip.blank(width)
        if index >= len(self._rows):
            return Strip.blank(width)
        text = self._row_text(self._rows[index], width)
        if index == self._cursor:
            name = "calltree--cursor" if self.has_focus else "calltree--cursor-blurred"
            text.stylize(self.get_component_rich_style(name))
        segments = list(text.render(self.app.console))
        return Strip(segments).crop_extend(0, width, None)

    def _row_text(self, row: TreeRow, width: int) -> Text:
        node = row.node
        total = max(1, self._tree.total_count)
        pct = f"{100 * node.total_count / total:6.1f}% {100 * node.self_count / total:6.1f}% "
        text = Text(pct, style=self.get_component_rich_style("calltree--pct"), end="")
        extra = self.decorate(node, row.path) if self.decorate is not None else None
        if extra is not None:
            text.append_text(extra)
        used = text.cell_len
        module_width = min(MODULE_WIDTH, max(0, width - used - 20))
        label_width = max(1, width - used - module_width - 1)
        text.append_text(self._label(row, label_width))
        if module_width:
            mod = Text(" " + module_name(node.module), style=self._style("calltree--module"))
            mod.truncate(module_width + 1, overflow="ellipsis", pad=True)
            text.append_text(mod)
        return text

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name)

    def _label(self, row: TreeRow, label_width: int) -> Text:
        node = row.node
        marker = "▼ " if row.expanded else ("▶ " if node.children else "  ")
        label_style: Style | str = ""
        if node.kernel:
            label_style = self._style("calltree--kernel")
        elif node.unresolved or ("+0x" in node.label and node.module):
            label_style = self._style("calltree--unresolved")
        label = Text("  " * row.depth + marker, end="")
        label.append(node.label, label_style)
        if self.match is not None and self.match(node):
            start = label.cell_len - len(node.label)
            label.stylize(self._style("calltree--match"), start, label.cell_len)
        if node.inlined:
            label.append(" (inlined)", self._style("calltree--source"))
        if self.show_source and node.source:
            label.append(f"  {node.source}", self._style("calltree--source"))
        label.truncate(label_width, overflow="ellipsis", pad=True)
        return label

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self._rows))
        self._scroll_cursor_visible()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
