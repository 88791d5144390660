"""The top-functions table: a DataTable refreshed in place each tick.

Sortable by any column (``s`` next column, ``S`` reverse, or a header click);
each row carries a trend marker against the previous tick's self share.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from bpftop.tui.calltree_view import module_name
from bpftop.tui.model.baseline import Baseline, delta_style, format_delta
from bpftop.tui.model.snapshot import CallNode, HotFunction
from bpftop.tui.model.views import HOT_COLUMNS, Match, NodeKey, sort_hot, trend

MAX_ROWS = 200
COLUMNS = (("self %", 7), ("total %", 7), ("samples", 9), ("function", 44), ("module", 32))
MATCH_STYLE = "bold underline on #806000"
DELTA_COLUMNS = (("Δself", 6, "dself"), ("Δtotal", 6, "dtotal"))


def row_key(fn: HotFunction) -> str:
    return f"{fn.label}\0{fn.module}\0{int(fn.kernel)}"


def key_of(row: str) -> NodeKey:
    label, module, kernel = row.split("\0")
    return (label, module, kernel == "1")


class HotTable(DataTable[Text]):
    """Functions by the chosen column; at most ``MAX_ROWS`` rows."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "cursor_up", "Up", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("s", "next_sort", "Sort"),
        Binding("S", "reverse_sort", "Reverse", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._hot: tuple[HotFunction, ...] = ()
        self._total = 0
        self._shares: dict[NodeKey, float] = {}
        self._trends: dict[NodeKey, str] = {}
        self._stale = False
        self.sort_column = "self"
        self.descending = True
        self.match: Match | None = None
        self.show_source = False
        self.baseline: Baseline | None = None

    def on_mount(self) -> None:
        for (title, width), key in zip(COLUMNS, HOT_COLUMNS, strict=True):
            self.add_column(title, width=width, key=key)
        self.add_column("", width=1, key="trend")

    def on_resize(self) -> None:
        """Give the function column what the fixed columns leave."""
        width = self.scrollable_content_region.width
        module = 32 if width >= 140 else 18
        fixed = sum(w for _, w in COLUMNS[:3]) + module + 1 + 2 * (len(self.columns))
        if self.baseline is not None:
            fixed += sum(w for _, w, _ in DELTA_COLUMNS)
        columns = self.columns
        function = columns.get("function")  # type: ignore[call-overload]
        module_column = columns.get("module")  # type: ignore[call-overload]
        if function is None or module_column is None:
            return
        wanted = max(16, width - fixed)
        if (function.width, module_column.width) != (wanted, module):
            function.width, module_column.width = wanted, module
            self._fill()

    @property
    def shown(self) -> tuple[HotFunction, ...]:
        return self._hot

    def update_hot(self, hot: tuple[HotFunction, ...], total: int, *, fill: bool = True) -> None:
        """New data (trends tracked every tick); redrawn only when ``fill``."""
        if hot is self._hot and total == self._total:
            if fill and self._stale:
                self._stale = False
                self._fill()
            return
        denom = max(1, total)
        shares = {(f.label, f.module, f.kernel): 100 * f.self_count / denom for f in hot}
        if total != self._total:
            before = self._shares
            self._trends = {k: trend(before.get(k), v) for k, v in shares.items()} if before else {}
            self._shares = shares
        self._hot, self._total = hot, total
        self._stale = not fill
        if fill:
            self._fill()

    def set_options(self, *, match: Match | None, show_source: bool) -> None:
        if match is not self.match or show_source != self.show_source:
            self.match, self.show_source = match, show_source
            self._fill()

    def set_baseline(self, baseline: Baseline | None) -> None:
        """Show Δ self % / Δ total % columns against ``baseline`` (None hides them)."""
        if baseline is self.baseline:
            return
        if baseline is not None and self.baseline is None:
            for title, width, key in DELTA_COLUMNS:
                self.add_column(title, width=width, key=key)
        elif baseline is None:
            for _, _, key in DELTA_COLUMNS:
                self.remove_column(key)
        self.baseline = baseline
        self.on_resize()
        self._fill()

    def selected_key(self) -> NodeKey | None:
        if not self.row_count or not 0 <= self.cursor_row < self.row_count:
            return None
        return key_of(str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value))

    def follow(self, key: NodeKey) -> None:
        row = row_key(_fn(key))
        if row in self.rows and self.selected_key() != key:
            self.move_cursor(row=self.get_row_index(row), animate=False)

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

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if column in HOT_COLUMNS:
            event.stop()
            self.sort_by(column)

    def _fill(self) -> None:
        selected = self.selected_key()
        scroll_y = self.scroll_y
        self.clear()
        self._label_columns()
        denom = max(1, self._total)
        for fn in sort_hot(self._hot, self.sort_column, self.descending)[:MAX_ROWS]:
            self.add_row(*self._cells(fn, denom), key=row_key(fn))
        if selected is not None and row_key(_fn(selected)) in self.rows:
            self.scroll_to(y=scroll_y, animate=False, immediate=True)
            self.move_cursor(row=self.get_row_index(row_key(_fn(selected))), animate=False)

    def _label_columns(self) -> None:
        arrow = "▼" if self.descending else "▲"
        for (title, _), key in zip(COLUMNS, HOT_COLUMNS, strict=True):
            column = self.columns.get(key)  # type: ignore[call-overload]
            if column is not None:
                column.label = Text(f"{title}{arrow}" if key == self.sort_column else title)

    def _cells(self, fn: HotFunction, denom: int) -> tuple[Text, ...]:
        label = Text(fn.label, style="yellow" if fn.kernel else "", no_wrap=True)
        if self.match is not None and self.match(_fn_node(fn)):
            label.stylize(MATCH_STYLE)
        if self.show_source and fn.source:
            label.append(f"  {fn.source}", "dim italic")
        label.overflow = "ellipsis"
        key = (fn.label, fn.module, fn.kernel)
        cells = (
            Text(f"{100 * fn.self_count / denom:6.1f}", justify="right"),
            Text(f"{100 * fn.total_count / denom:6.1f}", justify="right"),
            Text(f"{fn.self_count:,}", justify="right"),
            label,
            Text(module_name(fn.module), style="dim", overflow="ellipsis", no_wrap=True),
            _trend_text(self._trends.get(key, " ")),
        )
        if self.baseline is None:
            return cells
        deltas = self.baseline.function_delta(fn, self._total)
        return cells + tuple(
            Text(format_delta(d), style=delta_style(d), justify="right") for d in deltas
        )


def _trend_text(marker: str) -> Text:
    style = {"▲": "bold red", "▼": "green", "+": "bold magenta"}.get(marker, "")
    return Text(marker, style=style)


def _fn(key: NodeKey) -> HotFunction:
    return HotFunction(key[0], key[1], key[2], 0, 0)


def _fn_node(fn: HotFunction) -> CallNode:
    return CallNode(fn.label, fn.module, fn.kernel)
