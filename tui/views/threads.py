"""The Threads view: each thread's share of the samples; Enter shows one thread.

A Line-API list (``RowsView``), like the Top view: no scrollbar; when the
threads do not fit, the bottom border says which rows are shown. Choosing a
thread asks the source to build the following snapshots from that thread
alone (every view follows); ``a`` goes back to all threads.
"""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from textual.binding import Binding, BindingType
from textual.message import Message

from bpftop.tui.model.idle import busy_threads
from bpftop.tui.model.snapshot import ThreadShare
from bpftop.tui.views.shown import Shown
from bpftop.tui.widgets.line import Line
from bpftop.tui.widgets.rows_view import RowsView

BAR_WIDTH = 30
COLUMNS = (("tid", 8), ("name", 20), ("samples", 10), ("share", 7))
BAR_STYLE = Style(color="green")
SHOWN_STYLE = Style(bold=True, reverse=True)


class ThreadsView(RowsView):
    """One row per thread, hottest first; the shown thread is marked."""

    header_lines = 1
    header_component = "threads--header"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "choose", "Show thread"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {"threads--header"}

    DEFAULT_CSS = """
    ThreadsView > .threads--header { color: $text-accent; text-style: bold; background: $panel; }
    """

    class Chosen(Message):
        """Enter on a thread."""

        def __init__(self, tid: int) -> None:
            super().__init__()
            self.tid = tid

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._threads: tuple[ThreadShare, ...] = ()
        self._shown_tid: int | None = None
        self._total = 1

    @property
    def threads(self) -> tuple[ThreadShare, ...]:
        """The rows, hottest first."""
        return self._threads

    @property
    def shown_tid(self) -> int | None:
        """The thread every view shows (None: all threads)."""
        return self._shown_tid

    @property
    def row_count(self) -> int:
        return len(self._threads)

    def show(self, shown: Shown) -> None:
        """``shown``'s threads (the idle ones too when asked), its thread marked."""
        threads = shown.snapshot.threads if shown.snapshot is not None else ()
        threads = threads if shown.state.keep_idle else busy_threads(threads)
        self.update_threads(threads, shown.thread)

    def update_threads(self, threads: tuple[ThreadShare, ...], shown: int | None) -> None:
        if (threads, shown) == (self._threads, self._shown_tid):
            return
        selected = self._threads[self._cursor].tid if self._threads else None
        self._threads, self._shown_tid = threads, shown
        self._total = max(1, sum(t.samples for t in threads))
        at = next((i for i, t in enumerate(threads) if t.tid == selected), self._cursor)
        self._cursor = max(0, min(at, len(threads) - 1))
        self.rows_changed()

    def header_line(self, line: int, width: int) -> Line:
        return self._cells([Line().add(title) for title, _ in COLUMNS])

    def row_line(self, index: int, width: int) -> Line:
        t = self._threads[index]
        share = t.samples / self._total
        marked = SHOWN_STYLE if t.tid == self._shown_tid else None
        bar = "█" * max(1, round(BAR_WIDTH * share)) if t.samples else ""
        return self._cells(
            [
                Line().add(str(t.tid), marked),
                Line().add(t.name or "?", marked),
                Line().add(f"{t.samples:,}"),
                Line().add(f"{100 * share:5.1f}%"),
                Line().add(bar, BAR_STYLE),
            ]
        )

    def _cells(self, cells: list[Line]) -> Line:
        """Cells in their columns: tid, samples and share right-aligned, the bar last."""
        line = Line()
        for i, cell in enumerate(cells):
            width = COLUMNS[i][1] if i < len(COLUMNS) else BAR_WIDTH
            line.add(" ")
            cell = cell.cut(width) if cell.cells > width else cell
            pad = " " * (width - cell.cells)  # (cut pads too: pad once, on one side)
            if i in (0, 2, 3):
                line.add(pad).extend(cell)
            else:
                line.extend(cell).add(pad)
        return line

    def action_choose(self) -> None:
        if self._threads:
            self.post_message(self.Chosen(self._threads[self._cursor].tid))
