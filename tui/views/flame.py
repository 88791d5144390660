"""The flame graph (icicle: root on top) as a Line-API widget.

The layout (``model.flame.flame_rows``) is recomputed when the tree, the zoom
or the width changes (the last few zooms of a tree are kept: zooming back out
costs nothing); ``render_line`` only paints the spans of one row.
Boxes are colored by kind (user code by module, kernel, inlined, unknown);
arrows move between boxes (down: the widest callee), PgUp/PgDn a page of
levels, Home/End to the root / the deepest frame; ``Enter`` asks the app to zoom.
"""

from __future__ import annotations

import functools
import itertools
import zlib
from typing import ClassVar

from rich.style import Style
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from bpftop.tui.model.derived import Match, NodePath, hottest_path_of
from bpftop.tui.model.flame_layout import Span, flame_rows, frame_kind, span_at
from bpftop.tui.model.node_paths import node_at
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.store import NodeKey
from bpftop.tui.views.calltree import module_name
from bpftop.tui.views.shown import Shown
from bpftop.tui.widgets.line import Line
from bpftop.tui.widgets.lines_view import CachedLinesView
from bpftop.tui.widgets.visible import visible

MAX_DEPTH = 256
KEPT_LAYOUTS = 8
USER_COLORS = ("#b35900", "#a64d00", "#b36b00", "#995c00", "#b34700", "#8c5a1a")
KIND_COLORS = {"kernel": "#2f6f8f", "inlined": "#3f7f3f", "unknown": "#7f3f3f"}
TEXT = Style(color="#f0f0f0")
SELECTED = Style(reverse=True, bold=True)
MATCHED = Style(bgcolor="#b000b0", bold=True)
PLACEHOLDER = Style(italic=True, dim=True)


def box_style(node: CallNode) -> Style:
    """Background by kind; user frames by a stable hash of their module."""
    kind = frame_kind(node)
    return _kind_style(kind, node.module if kind == "user" else "")


@functools.cache
def _kind_style(kind: str, module: str) -> Style:
    if kind != "user":
        return TEXT + Style(bgcolor=KIND_COLORS[kind])
    index = zlib.crc32(module_name(module).encode()) % len(USER_COLORS)
    return TEXT + Style(bgcolor=USER_COLORS[index])


class FlameView(CachedLinesView, can_focus=True):
    """Icicle graph of the (zoomed) tree; one selected box."""

    range_noun = "levels"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "parent", "Parent", show=False),
        Binding("down,j", "child", "Child", show=False),
        Binding("left,h", "sibling(-1)", "Left", show=False),
        Binding("right,l", "sibling(1)", "Right", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "Root", show=False),
        Binding("end", "last", "Deepest", show=False),
        Binding("enter", "activate", "Zoom"),
    ]

    class Activated(Message):
        """Enter on a box: the app zooms into it."""

        def __init__(self, path: NodePath) -> None:
            super().__init__()
            self.path = path

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._tree = CallNode("all")
        self._root_path: NodePath = ()
        self._rows: list[list[Span]] = []
        self._width = 0  # of the layout in _rows
        self._stale = False  # _rows are not of the tree and zoom shown
        self._layouts: dict[tuple[NodePath, int], list[list[Span]]] = {}  # of _tree
        self.selected: NodePath = ()
        self.match: Match | None = None
        self.placeholder = "no samples yet"
        self._pending: NodeKey | None = None
        self._title: str | None = None  # the border title before the selection's share

    @property
    def rows(self) -> list[list[Span]]:
        return self._rows

    def set_tree(self, tree: CallNode, root_path: NodePath = ()) -> None:
        root_path = root_path if node_at(tree, root_path) is not None else ()
        if tree is self._tree and root_path == self._root_path and not self._stale:
            self._apply_follow()  # the layout stands (a view switch, no new tick)
            return
        if tree is not self._tree:
            self._layouts.clear()
        self._tree, self._root_path = tree, root_path
        self._stale = True
        self._layout()

    def show(self, shown: Shown) -> None:
        """``shown``'s tree from its zoom, with its search."""
        self.placeholder = shown.placeholder
        self.set_options(match=shown.state.match)
        self.set_tree(shown.tree, shown.state.zoom_path)

    def set_options(self, *, match: Match | None) -> None:
        if match is not self.match:
            self.match = match
            self.redraw()

    def _layout(self) -> None:
        width = self.content_size.width
        if not width:  # not mounted: laid out when shown, in on_resize
            return
        self._stale = False
        self._width = width
        self._rows = self._rows_of(self._root_path, width)
        if self._rows and span_at(self._rows, self.selected) is None:
            self.selected = self._nearest(self.selected)
        if self._rows and self._pending is not None:
            self._apply_follow()
        self.virtual_size = Size(0, len(self._rows))  # lines are cut to width
        self._scroll_selected_visible()
        self._title_selected()
        self.redraw()

    def _rows_of(self, root_path: NodePath, width: int) -> list[list[Span]]:
        """The layout of the tree zoomed to ``root_path``: kept for the last few
        zooms of this tree, so zooming back out (or in again) is not laid out again."""
        rows = self._layouts.pop((root_path, width), None)
        if rows is None:
            root = node_at(self._tree, root_path) or self._tree
            rows = flame_rows(root, root_path, width, MAX_DEPTH)
        self._layouts[root_path, width] = rows  # the most recent last
        while len(self._layouts) > KEPT_LAYOUTS:
            del self._layouts[next(iter(self._layouts))]
        return rows

    def _nearest(self, path: NodePath) -> NodePath:
        """The selected path, or its nearest shown ancestor, or the root."""
        root = self._root_path
        if path[: len(root)] == root:
            for n in range(len(path), len(root), -1):
                if span_at(self._rows, path[:n]) is not None:
                    return path[:n]
        return root

    # -- selection ------------------------------------------------------------
    def selected_key(self) -> NodeKey | None:
        return self.selected[-1] if len(self.selected) >= 2 else None

    def select(self, path: NodePath) -> bool:
        if span_at(self._rows, path) is None:
            return False
        before, self.selected = self.selected, path
        self._scroll_selected_visible()
        root = len(self._root_path)
        self.redraw_lines(len(before) - root, len(path) - root)  # the rows of both boxes
        self._title_selected()
        return True

    def selected_share(self) -> str:
        """The selected box's name and share of the whole profile (the title's end)."""
        node = node_at(self._tree, self.selected) if len(self.selected) >= 1 else None
        if node is None:
            return ""
        total = max(1, self._tree.total_count)
        return (
            f"{node.label}: {100 * node.total_count / total:.1f}% total, "
            f"{100 * node.self_count / total:.1f}% self"
        )

    def _title_selected(self) -> None:
        if self._title is None:
            self._title = str(self.border_title or "")
        share = self.selected_share()
        self.border_title = Content.assemble(self._title, ("  │ " + share) if share else "")

    def follow(self, key: NodeKey) -> None:
        """Select the hottest box of a function at the next ``set_tree`` (or layout)."""
        self._pending = key

    def _apply_follow(self) -> None:
        key, self._pending = self._pending, None
        if key is None or self.selected_key() == key:
            return
        root = node_at(self._tree, self._root_path)
        found = None if root is None else hottest_path_of(root, key)
        if found is not None:
            self.select(self._root_path + found)

    def matching_paths(self) -> list[NodePath]:
        match = self.match
        if match is None:
            return []
        return [s.path for row in self._rows for s in row if match(s.node)]

    def _scroll_selected_visible(self) -> None:
        depth = len(self.selected) - len(self._root_path)
        height = self.content_size.height
        if not height:
            return  # not laid out yet
        top = round(self.scroll_y)
        if depth < top:
            self.scroll_to_line(depth)
        elif depth >= top + height:
            self.scroll_to_line(depth - height + 1)

    def _up(self, levels: int) -> None:
        """Select the caller ``levels`` levels up (at most the root)."""
        keep = max(len(self._root_path), len(self.selected) - levels)
        if keep < len(self.selected):
            self.select(self.selected[:keep])

    def _down(self, levels: int) -> None:
        """Select the widest callee, and its widest callee, ``levels`` levels
        down (or as deep as the boxes go)."""
        path = self.selected
        found = span_at(self._rows, path)
        depth = found[0] if found is not None else len(self._rows)
        for row in self._rows[depth + 1 : depth + 1 + levels]:
            below = next((s.path for s in row if s.path[:-1] == path), None)  # widest first
            if below is None:
                break
            path = below
        if path != self.selected:
            self.select(path)

    def _page(self) -> int:
        return max(1, self.content_size.height - 1)

    def action_parent(self) -> None:
        self._up(1)

    def action_child(self) -> None:
        self._down(1)

    def action_page_up(self) -> None:
        self._up(self._page())

    def action_page_down(self) -> None:
        self._down(self._page())

    def action_first(self) -> None:
        self.select(self._root_path)

    def action_last(self) -> None:
        self._down(MAX_DEPTH)

    def action_sibling(self, step: int) -> None:
        found = span_at(self._rows, self.selected)
        if found is not None:
            row = self._rows[found[0]]
            self.select(row[max(0, min(len(row) - 1, found[1] + step))].path)

    def action_activate(self) -> None:
        self.post_message(self.Activated(self.selected))

    # -- rendering ------------------------------------------------------------
    def draw_line(self, y: int, width: int) -> Strip:
        depth = y + round(self.scroll_y)
        if not self._rows:
            if y == 0:
                return Line().add(self.placeholder, PLACEHOLDER).strip(width)
            return Strip.blank(width)
        if depth >= len(self._rows):
            return Strip.blank(width)
        return self._line(self._rows[depth]).strip(width)

    def _line(self, row: list[Span]) -> Line:
        """The row's boxes; neighbours of one style make one segment (fewer for
        Textual to process: a wide row has hundreds of one-cell boxes)."""
        pieces: list[tuple[str, Style | None]] = []
        selected = self.selected if row and len(row[0].path) == len(self.selected) else None
        match = self.match
        at = 0
        for span in row:
            if span.x > at:
                pieces.append((" " * (span.x - at), None))
            style = box_style(span.node)
            if match is not None and match(span.node):
                style += MATCHED
            if selected is not None and span.path[-1:] == selected[-1:] and span.path == selected:
                style += SELECTED
            pieces.append((self._box_text(span), style))
            at = span.x + span.width
        line = Line()
        for _, run in itertools.groupby(pieces, key=lambda piece: id(piece[1])):
            texts = list(run)
            line.add("".join(text for text, _ in texts), texts[0][1])
        return line

    def _box_text(self, span: Span) -> str:
        label = visible(span.node.label)  # cut what is shown, not the raw name
        if span.width <= 1:
            return " " if span.width == 1 else ""
        room = span.width - 1
        text = label if len(label) <= room else label[: max(0, room - 1)] + "…"
        return (text + " " * room)[:room] + "▏"

    def on_resize(self) -> None:
        if self._stale or self.content_size.width != self._width:
            self._layout()
