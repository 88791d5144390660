"""Control characters in names made visible before they reach the terminal.

Function names, process names, thread names and saved files come from
programs bpftop does not trust; a name holding ``ESC [ 41 m`` written raw
would drive the (root) terminal. :func:`visible` spells every C0 control,
DEL and C1 control as ``less`` and ``perf`` do (``^[`` for ESC, ``^?`` for
DEL, ``\\x85`` for C1); the data keeps the bytes, only the screen shows the
spelling. Row views spell names where they are laid out (:mod:`line
<bpftop.tui.widgets.line>`), so widths stay right; :class:`VisibleControls`
is the app-wide line filter behind them, so no widget (header, dialog,
notification) can forget. The spelling itself is :func:`bpftop.base.errors.spell_controls`,
which the one-line errors on stderr use too.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from bpftop.base.errors import spell_controls

visible = spell_controls
"""``text`` with each control character spelled out (unchanged when it has none)."""


class VisibleControls(LineFilter):
    """A line filter spelling out control characters in every segment of every line.

    A spelled character takes more cells than the raw one counted (none), so a
    line that grew is cut back to its width."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if all(seg.control or seg.text.isprintable() for seg in segments):
            return segments
        width = sum(seg.cell_length for seg in segments if not seg.control)
        spelled = [
            seg if seg.control else Segment(visible(seg.text), seg.style) for seg in segments
        ]
        if sum(cell_len(seg.text) for seg in spelled if not seg.control) == width:
            return spelled
        return list(Segment.adjust_line_length(spelled, width))
