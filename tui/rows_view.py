"""A Line-API list of rows with a cursor: what the call tree and the top table share.

Subclasses say how many rows there are and draw one row; this class keeps
the cursor in range and in view, scrolls, and binds the movement keys. Rows
are drawn only when on screen, so a view costs what is visible, not what
the profile holds. An optional fixed header takes the first ``header_lines``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


class CachedLinesView(ScrollView):
    """A Line-API view that draws each line once per refresh.

    Textual asks for a line several times per refresh (a view switch renders
    the screen more than once); subclasses draw in ``draw_line``, and what they
    drew is kept until ``refresh``. The first ``header_lines`` do not scroll.
    """

    header_lines = 0

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: dict[tuple[int, int], Strip] = {}  # (y + scroll, width) -> drawn line

    def refresh(self, *regions: Any, **kwargs: Any) -> Self:
        """Redraw: anything may have changed, so drawn lines are forgotten."""
        self._lines = {}
        return super().refresh(*regions, **kwargs)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        key = (y if y < self.header_lines else y + round(self.scroll_y), width)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = self.draw_line(y, width)
        return line

    def draw_line(self, y: int, width: int) -> Strip:
        """Screen line ``y`` (``width`` cells)."""
        raise NotImplementedError


class RowsView(CachedLinesView, can_focus=True):
    """Rows 0..row_count-1 under ``header_lines`` fixed lines; one is the cursor.

    The styles rows share (cursor, kernel frames, modules, search matches,
    file:line) are component classes here; subclasses add their own.
    """

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
        self.placeholder = "no samples yet"

    # -- what subclasses provide ----------------------------------------------
    @property
    def row_count(self) -> int:
        raise NotImplementedError

    def row_text(self, index: int, width: int) -> Text:
        """Row ``index`` as text of ``width`` cells."""
        raise NotImplementedError

    def header_text(self, line: int, width: int) -> Text:
        """Fixed header line ``line`` (only when ``header_lines`` > 0)."""
        return Text()

    def cursor_moved(self) -> None:
        """The cursor is on a new row (remember what it selects)."""

    # -- cursor ---------------------------------------------------------------
    @property
    def cursor(self) -> int:
        return self._cursor

    def move_cursor(self, row: int) -> None:
        if not self.row_count:
            return
        self._cursor = max(0, min(row, self.row_count - 1))
        self.cursor_moved()
        self.scroll_cursor_visible()
        self.refresh()

    def rows_changed(self) -> None:
        """Call after the rows change: resize the scroll area, redraw."""
        self.virtual_size = Size(self.size.width, self.row_count + self.header_lines)
        self.scroll_cursor_visible()
        self.refresh()

    def scroll_cursor_visible(self) -> None:
        height = max(1, self.scrollable_content_region.height - self.header_lines)
        top = round(self.scroll_y)
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True)
        elif self._cursor >= top + height:
            self.scroll_to(y=self._cursor - height + 1, animate=False, immediate=True)

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
            return self._strip(self.header_text(y, width), width)
        index = y - self.header_lines + round(self.scroll_y)
        if not self.row_count:
            if y == self.header_lines:
                style = self.get_component_rich_style("rows--placeholder")
                return Strip([Segment(self.placeholder, style)]).crop_extend(0, width, None)
            return Strip.blank(width)
        if index >= self.row_count:
            return Strip.blank(width)
        text = self.row_text(index, width)
        if index == self._cursor:
            cursor = "rows--cursor" if self.has_focus else "rows--cursor-blurred"
            text.stylize(self.get_component_rich_style(cursor))
        return self._strip(text, width)

    def _strip(self, text: Text, width: int) -> Strip:
        return Strip(list(text.render(self.app.console))).crop_extend(0, width, None)

    def style_of(self, name: str) -> Style:
        """A component's text style without its background (rows keep the view's,
        or the cursor's); ``highlight_of`` keeps the background."""
        full = self.get_component_rich_style(name)
        return Style(color=full.color, bold=full.bold, italic=full.italic, underline=full.underline)

    def highlight_of(self, name: str) -> Style:
        return self.get_component_rich_style(name)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, self.row_count + self.header_lines)
        self.scroll_cursor_visible()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
