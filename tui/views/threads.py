"""The Threads view: each thread's share of the samples; Enter shows one thread.

Choosing a thread asks the source to build the following snapshots from that
thread alone (every view follows); ``a`` goes back to all threads.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

from bpftop.tui.model.snapshot import ThreadShare

BAR_WIDTH = 30


class ThreadsView(DataTable[Text]):
    """One row per thread, hottest first; the shown thread is marked."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "cursor_up", "Up", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("enter", "choose", "Show thread"),
    ]

    class Chosen(Message):
        """Enter on a thread."""

        def __init__(self, tid: int) -> None:
            super().__init__()
            self.tid = tid

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._shown: tuple[tuple[ThreadShare, ...], int | None] | None = None

    def on_mount(self) -> None:
        for title, width in (("tid", 8), ("name", 20), ("samples", 10), ("share", 7)):
            self.add_column(title, width=width, key=title)
        self.add_column("", width=BAR_WIDTH, key="bar")

    def update_threads(self, threads: tuple[ThreadShare, ...], shown: int | None) -> None:
        if self._shown == (threads, shown):
            return
        self._shown = (threads, shown)
        row = self.cursor_row
        self.clear()
        total = max(1, sum(t.samples for t in threads))
        for t in threads:
            share = t.samples / total
            style = "bold reverse" if t.tid == shown else ""
            self.add_row(
                Text(str(t.tid), style, justify="right"),
                Text(t.name or "?", style),
                Text(f"{t.samples:,}", justify="right"),
                Text(f"{100 * share:5.1f}%", justify="right"),
                Text("█" * max(1, round(BAR_WIDTH * share)) if t.samples else "", "green"),
                key=str(t.tid),
            )
        if self.row_count:
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)

    def action_choose(self) -> None:
        if self.row_count:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
            self.post_message(self.Chosen(int(str(key))))
