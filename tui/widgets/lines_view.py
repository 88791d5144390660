"""A Line-API view that draws each line once until its content changes.

The call tree, the Top view, the flame graph and the diagnostics page are
all lists of lines; this class keeps what was drawn, scrolls without
scrollbars (a range under the view says where you are) and knows the size a
hidden view will have, so a view switch lays out and draws once.
"""

from __future__ import annotations

from rich.style import Style
from textual.events import MouseScrollDown, MouseScrollUp
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget


class CachedLinesView(ScrollView):
    """A Line-API view that draws each line once until its content changes.

    Textual asks for a line several times per refresh (a view switch renders
    the screen more than once, a scroll repaints every line); subclasses draw
    in ``draw_line``, and what they drew is kept, by content line (screen line
    plus scroll offset), until ``redraw()`` (the content changed),
    ``redraw_lines`` (these lines changed) or a style change. Textual's own
    ``refresh`` only repaints. The first ``header_lines`` do not scroll.

    No scrollbars: keys move through the rows, the wheel scrolls. A shown
    scrollbar cost 2-3 ms a frame, and its appearing a second layout pass.
    """

    DEFAULT_CSS = """
    CachedLinesView { overflow-x: hidden; overflow-y: hidden; }
    """

    header_lines = 0
    range_noun = "rows"  # what the range under the view counts
    WHEEL_LINES = 3

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: dict[int, Strip] = {}  # content line -> drawn line
        self._drawn_width = 0  # of the lines in _lines
        self._drawn_styles: tuple[Style, ...] = ()  # the component styles they were drawn with
        self._styles_checked = False

    @property
    def content_size(self) -> Size:
        """Cells per line and lines; while hidden (before a view switch shows it)
        the size it will have: its parent's, less its own border and padding."""
        size = self.scrollable_content_region.size
        if not size and isinstance(self.parent, Widget):
            gutter = self.styles.gutter
            parent = self.parent.scrollable_content_region.size
            size = Size(max(0, parent.width - gutter.width), max(0, parent.height - gutter.height))
        return size

    def redraw(self) -> None:
        """The content changed: draw every line again."""
        self._lines = {}
        self.refresh()

    def redraw_lines(self, *lines: int) -> None:
        """These content lines changed: draw them again (no other line is repainted)."""
        top = round(self.scroll_y)
        height = self.scrollable_content_region.height
        for line in lines:
            self._lines.pop(line, None)
            y = line if line < self.header_lines else line - top
            if 0 <= y < height:
                self.refresh(Region(0, y, self._drawn_width or self.size.width, 1))

    def notify_style_update(self) -> None:
        """Styles changed (a theme, or only the focus border): before the next
        line is drawn, see whether a component style the lines use changed."""
        super().notify_style_update()
        self._styles_checked = False

    def _check_styles(self) -> None:
        used = tuple(
            self.get_component_rich_style(name) for name in sorted(self._get_component_classes())
        )
        if used != self._drawn_styles:
            self._lines, self._drawn_styles = {}, used
        self._styles_checked = True

    def show_range(self) -> None:
        """``rows 46-90 of 480`` under the view, when not every line fits (no scrollbar)."""
        height = self.content_size.height - self.header_lines
        count = self.virtual_size.height - self.header_lines
        top = round(self.scroll_y)
        shown = ""
        if 0 < height < count:
            shown = f"{self.range_noun} {top + 1:,}-{min(count, top + height):,} of {count:,}"
        if shown != (self.border_subtitle or ""):
            self.border_subtitle = shown

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.show_range()

    def watch_virtual_size(self) -> None:
        self.show_range()

    def on_resize(self) -> None:
        self.show_range()

    def scroll_to_line(self, y: float) -> None:
        """Scroll now so that content line ``y`` is at the top (overflow is hidden)."""
        self.scroll_to(y=y, animate=False, immediate=True, force=True)

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        self.scroll_to_line(self.scroll_y + self.WHEEL_LINES)
        event.stop()

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        self.scroll_to_line(self.scroll_y - self.WHEEL_LINES)
        event.stop()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if width != self._drawn_width:
            self._lines, self._drawn_width = {}, width
        if not self._styles_checked:
            self._check_styles()
        key = y if y < self.header_lines else y + round(self.scroll_y)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = self.draw_line(y, width)
        return line

    def draw_line(self, y: int, width: int) -> Strip:
        """Screen line ``y`` (``width`` cells)."""
        raise NotImplementedError
