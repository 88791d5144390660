"""The `?` help screen: every key, in one place."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("q / Ctrl+C", "quit"),
    ("space", "pause / resume the display (sampling continues)"),
    ("Tab", "switch between hot functions and call tree"),
    ("w", "write the shown profile as folded stacks"),
    ("?", "this help"),
    ("↑ ↓ / k j", "move the selection"),
    ("PgUp PgDn Home End", "move by page / to the ends (call tree)"),
    ("→ / l", "expand the selected node"),
    ("← / h", "collapse, or go to the parent"),
    ("Enter", "toggle the selected node"),
    ("e", "expand the hot path below the selection"),
)


def help_text() -> str:
    lines = ["[b]bpftop keys[/b]", ""]
    lines += [f"[b]{key:>20}[/b]  {what}" for key, what in KEYS]
    lines += ["", "Percentages are of all samples.  Esc / ? / q closes this help."]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of Esc, ?, q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close"),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 80; height: auto; border: thick $accent; background: $surface; padding: 1 2;
    }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(help_text(), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
