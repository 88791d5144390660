"""The Top view: the top functions, a Line-API table of at most ``MAX_ROWS`` rows.

Sortable by any column (``s`` next column, ``S`` reverse, or a click on the
header); each row carries a trend marker against its self share
``TREND_TICKS`` ticks before (``model.views.trend``), and with a baseline
Δ self % / Δ total % columns. Rows are drawn only when on screen (a
DataTable rebuilt its rows each tick: 80-100 ms at 200x50).
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar

from rich.style import Style
from textual.binding import Binding, BindingType
from textual.events import Click

from bpftop.tui.model.baseline import Baseline, delta_style, format_delta
from bpftop.tui.model.derived import HOT_COLUMNS, TREND_TICKS, Match, sort_hot, trend
from bpftop.tui.model.snapshot import CallNode, HotFunction
from bpftop.tui.model.store import NodeKey
from bpftop.tui.views.calltree import module_name
from bpftop.tui.views.shown import Shown
from bpftop.tui.widgets.line import Line
from bpftop.tui.widgets.rows_view import RowsView

MAX_ROWS = 200
COLUMNS = (("self %", 7), ("total %", 7), ("samples", 9), ("function", 44), ("module", 32))
DELTA_COLUMNS = (("Δself", 6), ("Δtotal", 6))
TREND_STYLES = {
    "▲": Style(color="red", bold=True),
    "▼": Style(color="green"),
    "+": Style(color="magenta", bold=True),
}


def fn_key(fn: HotFunction) -> NodeKey:
    return (fn.label, fn.module, fn.kernel)


def format_amount(count: int, unit: str) -> str:
    """A self count as shown: samples as they are, nanoseconds (time probes) scaled."""
    if unit != "ns":
        return f"{count:,}"
    for scale, suffix in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if count >= scale:
            return f"{count / scale:.3g} {suffix}"
    return f"{count} ns"


class TopView(RowsView):
    """Functions by the chosen column."""

    header_lines = 1
    header_component = "top--header"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "next_sort", "Sort"),
        Binding("S", "reverse_sort", "Reverse", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {"top--header"}

    DEFAULT_CSS = """
    TopView > .top--header { color: $text-accent; text-style: bold; background: $panel; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._hot: tuple[HotFunction, ...] = ()
        self._total = 0
        self._shares: deque[dict[NodeKey, float]] = deque(maxlen=TREND_TICKS)  # oldest first
        self._trends: dict[NodeKey, str] = {}
        self._rows: list[HotFunction] = []
        self._selected: NodeKey | None = None
        self._follow: NodeKey | None = None  # a function to select at the next fill
        self._stale = False
        self.sort_column = "self"
        self.descending = True
        self.match: Match | None = None
        self.show_lines = False
        self.baseline: Baseline | None = None
        self.unit = ""  # "ns": a time probe (uretprobe latency, offcpu)

    # -- data -----------------------------------------------------------------
    @property
    def functions(self) -> tuple[HotFunction, ...]:
        """The functions of the last update, every tick (the rows are made of
        them only while the view is shown)."""
        return self._hot

    @property
    def ordered(self) -> list[HotFunction]:
        """The rows in display order."""
        return self._rows

    @property
    def row_count(self) -> int:
        return len(self._rows)

    def update_functions(
        self, hot: tuple[HotFunction, ...], total: int, *, fill: bool = True, unit: str = ""
    ) -> None:
        """New data (trends tracked every tick); re-sorted only when ``fill``.
        ``unit`` "ns": the counts are time, shown in a time column."""
        if unit != self.unit:
            self.unit = unit
            self.redraw()
        if hot is not self._hot or total != self._total:
            denom = max(1, total)
            shares = {fn_key(f): 100 * f.self_count / denom for f in hot}
            if total != self._total:
                before = self._shares[0] if self._shares else {}
                self._trends = {k: trend(before.get(k), v) for k, v in shares.items() if before}
                self._shares.append(shares)
            self._hot, self._total = hot, total
            self._stale = True
        if fill and self._stale:
            self._fill()
        if fill and self._follow is not None:
            key, self._follow = self._follow, None
            if key != self.selected_key() and any(fn_key(fn) == key for fn in self._rows):
                self.move_cursor(self._index_of(key))

    def show(self, shown: Shown) -> None:
        """The functions of ``shown``'s tree, with its search, file:line and baseline."""
        self.set_baseline(shown.state.baseline)
        self.set_options(match=shown.state.match, show_lines=shown.show_lines)
        hot = shown.derived.hot if shown.derived is not None else ()  # None: being made
        self.update_functions(hot, shown.tree.total_count, unit=shown.unit)

    def set_options(self, *, match: Match | None, show_lines: bool) -> None:
        if match is not self.match or show_lines != self.show_lines:
            self.match, self.show_lines = match, show_lines
            self.redraw()

    def set_baseline(self, baseline: Baseline | None) -> None:
        """Show Δ self % / Δ total % columns against ``baseline`` (None hides them)."""
        if baseline is not self.baseline:
            self.baseline = baseline
            self.redraw()

    def _fill(self) -> None:
        self._stale = False
        self._rows = sort_hot(self._hot, self.sort_column, self.descending)[:MAX_ROWS]
        self._cursor = self._index_of(self._selected) if self._selected is not None else 0
        if self._selected is None and self._rows:
            self._selected = fn_key(self._rows[0])  # fresh data never moves the selection
        self.rows_changed()

    def _index_of(self, key: NodeKey | None) -> int:
        return next((i for i, fn in enumerate(self._rows) if fn_key(fn) == key), 0)

    # -- selection ------------------------------------------------------------
    def cursor_moved(self) -> None:
        self._selected = fn_key(self._rows[self._cursor])

    def selected_key(self) -> NodeKey | None:
        return fn_key(self._rows[self._cursor]) if self._rows else None

    def follow(self, key: NodeKey) -> None:
        """Select a function (another view's selection) at the next filled update."""
        self._follow = key

    # -- sorting --------------------------------------------------------------
    def action_next_sort(self) -> None:
        i = HOT_COLUMNS.index(self.sort_column)
        self.sort_by(HOT_COLUMNS[(i + 1) % len(HOT_COLUMNS)])

    def action_reverse_sort(self) -> None:
        self.descending = not self.descending
        self._fill()

    def sort_by(self, column: str) -> None:
        self.sort_column = column
        self.descending = column not in ("function", "module")
        self._fill()

    def on_click(self, event: Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y != 0:
            return
        x = offset.x
        for column, (start, width) in zip(HOT_COLUMNS, self.column_spans(), strict=False):
            if start <= x < start + width:
                self.sort_by(column)
                return

    # -- drawing --------------------------------------------------------------
    def column_spans(self) -> list[tuple[int, int]]:
        """(start, width) of each column in cells, the function column taking what is left."""
        width = self.scrollable_content_region.width
        module = 32 if width >= 140 else 18
        widths = [w for _, w in COLUMNS[:3]]
        fixed = sum(widths) + module + 1 + len(COLUMNS) + 1
        if self.baseline is not None:
            fixed += sum(w + 1 for _, w in DELTA_COLUMNS)
        widths += [max(16, width - fixed), module, 1]
        if self.baseline is not None:
            widths += [w for _, w in DELTA_COLUMNS]
        spans, x = [], 0
        for w in widths:
            spans.append((x, w))
            x += w + 1
        return spans

    def header_line(self, line: int, width: int) -> Line:
        arrow = "▼" if self.descending else "▲"
        names = [title for title, _ in COLUMNS]
        names[2] = "time" if self.unit == "ns" else names[2]
        titles = [
            f"{title}{arrow}" if key == self.sort_column else title
            for title, key in zip(names, HOT_COLUMNS, strict=True)
        ]
        titles += ["", *(t for t, _ in DELTA_COLUMNS)] if self.baseline else [""]
        return self._join([Line().add(t) for t in titles], numeric=3)

    def row_line(self, index: int, width: int) -> Line:
        return self._join(self._cells(self._rows[index]), numeric=3)

    def _join(self, cells: list[Line], numeric: int) -> Line:
        """Cells in their columns: numbers (and the Δ columns) right-aligned."""
        line = Line()
        for i, (cell, (_, width)) in enumerate(zip(cells, self.column_spans(), strict=False)):
            if i:
                line.add(" ")
            if (i < numeric or i >= len(COLUMNS) + 1) and cell.cells < width:
                line.add(" " * (width - cell.cells)).extend(cell)
            else:
                line.extend(cell.cut(width))
        return line

    def _cells(self, fn: HotFunction) -> list[Line]:
        denom = max(1, self._total)
        style = self.style_of("rows--kernel") if fn.kernel else None
        if self.match is not None and self.match(CallNode(fn.label, fn.module, fn.kernel)):
            matched = self.highlight_of("rows--match")
            style = style + matched if style is not None else matched
        label = Line().add(fn.label, style)
        if self.show_lines and fn.source:
            label.add(f"  {fn.source}", self.style_of("rows--source"))
        marker = self._trends.get(fn_key(fn), " ")
        cells = [
            Line().add(f"{100 * fn.self_count / denom:6.1f}"),
            Line().add(f"{100 * fn.total_count / denom:6.1f}"),
            Line().add(format_amount(fn.self_count, self.unit)),
            label,
            Line().add(module_name(fn.module), self.style_of("rows--module")),
            Line().add(marker, TREND_STYLES.get(marker)),
        ]
        if self.baseline is not None:
            for d in self.baseline.function_delta(fn, self._total):
                cells.append(Line().add(format_delta(d), Style.parse(delta_style(d))))
        return cells
