"""A Line-API list of rows with a cursor: what the call tree and the Top view share.

Subclasses say how many rows there are and draw one row; this class keeps
the cursor in range and in view, scrolls, and binds the movement keys. Rows
are drawn only when on screen, so a view costs what is visible, not what
the profile holds. An optional fixed header takes the first ``header_lines``.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.strip import Strip

from bpftop.tui.widgets.line import Line
from bpftop.tui.widgets.lines_view import CachedLinesView


class RowsView(CachedLinesView, can_focus=True):
    """Rows 0..row_count-1 under ``header_lines`` fixed lines; one is the cursor.

    The styles rows share (cursor, kernel frames, modules, search matches,
    file:line) are component classes here; subclasses add their own.
    """

    header_component = ""  # the header lines' style (a component class), if any

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "rows--cursor",
        "rows--cursor-blurred",
        "rows--placeholder",
        "rows--kernel",
        "rows--module",
        "rows--match",
        "rows--source",
    }

    DEFAULT_CSS = """
    RowsView > .rows--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }
    RowsView > .rows--cursor-blurred { background: $block-cursor-blurred-background; }
    RowsView > .rows--placeholder { color: $text-muted; text-style: italic; }
    RowsView > .rows--kernel { color: $text-warning; }
    RowsView > .rows--module { color: $text-muted; }
    RowsView > .rows--match { background: $warning 40%; text-style: bold underline; }
    RowsView > .rows--source { color: $text-muted; text-style: italic; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._cursor = 0
        self._styles: dict[str, Style] = {}  # style_of, until the styles change
        self.placeholder = "no samples yet"

    # -- what subclasses provide ----------------------------------------------
    @property
    def row_count(self) -> int:
        raise NotImplementedError

    def row_line(self, index: int, width: int) -> Line:
        """Row ``index`` in ``width`` cells (longer is cut, shorter padded)."""
        raise NotImplementedError

    def header_line(self, line: int, width: int) -> Line:
        """Fixed header line ``line`` (only when ``header_lines`` > 0)."""
        return Line()

    def cursor_moved(self) -> None:
        """The cursor is on a new row (remember what it selects)."""

    # -- cursor ---------------------------------------------------------------
    @property
    def cursor(self) -> int:
        return self._cursor

    def move_cursor(self, row: int) -> None:
        if not self.row_count:
            return
        before, self._cursor = self._cursor, max(0, min(row, self.row_count - 1))
        self.cursor_moved()
        self.scroll_cursor_visible()
        self.redraw_lines(before + self.header_lines, self._cursor + self.header_lines)

    def rows_changed(self) -> None:
        """Call after the rows change: resize the scroll area, redraw."""
        self.virtual_size = Size(0, self.row_count + self.header_lines)  # lines are cut to width
        self.scroll_cursor_visible()
        self.redraw()

    def scroll_cursor_visible(self) -> None:
        height = self.content_size.height - self.header_lines
        if height <= 0:
            return  # not laid out yet: on_resize scrolls
        top = round(self.scroll_y)
        if self._cursor < top:
            self.scroll_to_line(self._cursor)
        elif self._cursor >= top + height:
            self.scroll_to_line(self._cursor - height + 1)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - self.header_lines - 1)

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
        self.move_cursor(self.row_count - 1)

    # -- rendering ------------------------------------------------------------
    def draw_line(self, y: int, width: int) -> Strip:
        if y < self.header_lines:
            over = self.highlight_of(self.header_component) if self.header_component else None
            return self.header_line(y, width).strip(width, over)
        index = y - self.header_lines + round(self.scroll_y)
        if not self.row_count:
            if y == self.header_lines:
                style = self.get_component_rich_style("rows--placeholder")
                return Strip([Segment(self.placeholder, style)]).crop_extend(0, width, None)
            return Strip.blank(width)
        if index >= self.row_count:
            return Strip.blank(width)
        over = None
        if index == self._cursor:
            over = self.highlight_of("rows--cursor" if self.has_focus else "rows--cursor-blurred")
        return self.row_line(index, width).strip(width, over)

    def style_of(self, name: str) -> Style:
        """A component's text style without its background (rows keep the view's,
        or the cursor's); ``highlight_of`` keeps the background."""
        style = self._styles.get(name)
        if style is None:
            full = self.get_component_rich_style(name)
            style = Style(
                color=full.color, bold=full.bold, italic=full.italic, underline=full.underline
            )
            self._styles[name] = style
        return style

    def highlight_of(self, name: str) -> Style:
        return self.get_component_rich_style(name)

    def notify_style_update(self) -> None:
        self._styles = {}
        super().notify_style_update()

    def on_resize(self) -> None:
        self.scroll_cursor_visible()

    def on_focus(self) -> None:
        self.redraw_lines(self._cursor + self.header_lines)  # focused and blurred cursors differ

    def on_blur(self) -> None:
        self.redraw_lines(self._cursor + self.header_lines)
