"""The `?` help screen: every key, made from the bindings (``keys.KEY_HELP``)."""

from __future__ import annotations

import textwrap
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from bpftop.tui.app.keys import KEY_HELP, keys_text

KEY_WIDTH = 20
WIDTH = 76
"""Cells inside the box (84 wide, less its border, padding and a scrollbar)."""


def help_text() -> Text:
    """Each help row: its keys right-aligned, then what they do (both wrapped)."""
    text = Text()
    text.append("bpftop keys", "bold")
    text.append("\n")
    for row in KEY_HELP:
        keys = textwrap.wrap(keys_text(row), KEY_WIDTH)
        what = textwrap.wrap(row.what, WIDTH - KEY_WIDTH - 2, break_on_hyphens=False)
        marked = False
        for n in range(max(len(keys), len(what))):
            key = keys[n] if n < len(keys) else ""
            text.append(f"\n{key:>{KEY_WIDTH}}  ", "bold")
            marked = _append_marked(text, what[n] if n < len(what) else "", marked)
    text.append("\n\nPercentages are of all samples (of the matching ones while filtering).")
    return text


def _append_marked(text: Text, line: str, marked: bool) -> bool:
    """``line`` with its `backticked` parts bold (without the backticks); whether
    a marked part goes on past the end of the line."""
    for n, part in enumerate(line.split("`")):
        if n:
            marked = not marked
        text.append(part, "bold" if marked else "")
    return marked


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of Esc, ?, q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close"),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 84; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 1 2;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text(), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
