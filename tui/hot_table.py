"""The hot-functions table: a DataTable refreshed in place each tick."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from bpftop.tui.calltree_view import module_name
from bpftop.tui.model.snapshot import HotFunction

MAX_ROWS = 200


def row_key(fn: HotFunction) -> str:
    return f"{fn.label}\0{fn.module}\0{int(fn.kernel)}"


class HotTable(DataTable[Text]):
    """Functions by self samples; at most ``MAX_ROWS`` rows."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "cursor_up", "Up", show=False),
        Binding("j", "cursor_down", "Down", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._shown: tuple[HotFunction, ...] = ()
        self._total = 0

    def on_mount(self) -> None:
        self.add_column("self %", width=7, key="self")
        self.add_column("total %", width=7, key="total")
        self.add_column("samples", width=9, key="samples")
        self.add_column("function", width=44, key="function")
        self.add_column("module", width=32, key="module")

    def update_hot(self, hot: tuple[HotFunction, ...], total: int) -> None:
        """Replace the rows, keeping the selected function selected."""
        rows = hot[:MAX_ROWS]
        if rows == self._shown and total == self._total:
            return
        self._shown, self._total = rows, total
        selected: str | None = None
        if self.row_count and 0 <= self.cursor_row < self.row_count:
            selected = str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
        scroll_y = self.scroll_y
        self.clear()
        denom = max(1, total)
        for fn in rows:
            style = "yellow" if fn.kernel else ""
            self.add_row(
                Text(f"{100 * fn.self_count / denom:6.1f}", justify="right"),
                Text(f"{100 * fn.total_count / denom:6.1f}", justify="right"),
                Text(f"{fn.self_count:,}", justify="right"),
                Text(fn.label, style=style, overflow="ellipsis", no_wrap=True),
                Text(module_name(fn.module), style="dim", overflow="ellipsis", no_wrap=True),
                key=row_key(fn),
            )
        if selected is not None and selected in self.rows:
            self.scroll_to(y=scroll_y, animate=False, immediate=True)
            self.move_cursor(row=self.get_row_index(selected), animate=False)
