"""One screen line built straight from styled pieces: what the row views draw with.

A row is a few pieces of text, each with a style, padded or cut to column
widths. rich's ``Text`` (spans, wrapping, justification) and its rendering
cost ~0.2 ms a row, a quarter of a tick's render at 200x50; a ``Line`` is a
list of segments and a running cell count. Every piece of text is spelled
with :func:`~bpftop.tui.widgets.visible.visible` on its way in, so a name's
control characters never reach the terminal and widths count what is shown.
"""

from __future__ import annotations

from typing import Literal

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from bpftop.tui.widgets.visible import visible

ELLIPSIS = "…"


def fit(text: str, width: int, align: Literal["left", "right"] = "left") -> str:
    """``text`` (control characters spelled out) in exactly ``width`` cells: cut
    with an ellipsis, or padded."""
    if width <= 0:
        return ""
    text = visible(text)
    cells = cell_len(text)
    if cells > width:
        return set_cell_size(text, width - 1) + ELLIPSIS
    if align == "right":
        return " " * (width - cells) + text
    return text + " " * (width - cells)


class Line:
    """Segments appended left to right; ``strip`` makes the screen line."""

    __slots__ = ("cells", "segments")

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.cells = 0

    def add(self, text: str, style: Style | None = None) -> Line:
        if text:
            text = visible(text)
            self.segments.append(Segment(text, style))
            self.cells += cell_len(text)
        return self

    def add_fit(
        self,
        text: str,
        width: int,
        style: Style | None = None,
        align: Literal["left", "right"] = "left",
    ) -> Line:
        """``text`` cut or padded to ``width`` cells (padding unstyled)."""
        text = visible(text)
        cells = cell_len(text)
        if cells > width:
            return self.add(fit(text, width), style)
        if align == "right":
            self.add(" " * (width - cells))
            return self.add(text, style)
        self.add(text, style)
        return self.add(" " * (width - cells))

    def extend(self, other: Line) -> Line:
        self.segments.extend(other.segments)
        self.cells += other.cells
        return self

    def cut(self, width: int) -> Line:
        """Keep the first ``width`` cells (an ellipsis where text was cut), pad to them."""
        if self.cells <= width:
            return self.add(" " * (width - self.cells))
        kept: list[Segment] = []
        room = width
        for text, style, _ in self.segments:
            cells = cell_len(text)
            if cells < room:
                kept.append(Segment(text, style))
                room -= cells
                continue
            if room > 0:  # this piece reaches the edge and more follows: it ends in "…"
                kept.append(Segment(set_cell_size(text, room - 1) + ELLIPSIS, style))
            break
        self.segments, self.cells = kept, width
        return self

    @property
    def plain(self) -> str:
        return "".join(segment.text for segment in self.segments)

    def strip(self, width: int, over: Style | None = None) -> Strip:
        """The line in ``width`` cells; ``over`` (the cursor) is laid over every piece."""
        segments = self.segments
        if self.cells < width:
            segments = [*segments, Segment(" " * (width - self.cells))]
        elif self.cells > width:
            return Line().extend(self).cut(width).strip(width, over)
        if over is not None:
            segments = [
                Segment(text, style + over if style else over) for text, style, _ in segments
            ]
        return Strip(segments, width)
