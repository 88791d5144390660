"""NO_COLOR: the screen in shades of grey, whatever a widget draws.

Textual honours ``NO_COLOR`` (set, even empty) with a line filter that turns
every colour grey, but that filter fails on a segment without a style (a
plain-text segment: ``AttributeError``, and the app ends). :class:`Monochrome`
is the same conversion that leaves such segments as they are; the app uses
it in place of Textual's (:func:`safe_filters`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter, monochrome_style
from textual.filter import Monochrome as TextualMonochrome


class Monochrome(LineFilter):
    """Every colour of every styled segment turned grey (unstyled ones kept)."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [
            Segment(text, None if style is None else monochrome_style(style), control)
            for text, style, control in segments
        ]


def safe_filters(filters: Sequence[LineFilter]) -> list[LineFilter]:
    """``filters`` with Textual's monochrome filter replaced by :class:`Monochrome`."""
    return [
        Monochrome(enabled=f.enabled) if isinstance(f, TextualMonochrome) else f for f in filters
    ]
