"""The `?` help screen: every key, in one place."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("q / Ctrl+C", "quit"),
    ("space", "pause / resume the display (sampling continues)"),
    ("Tab / Shift+Tab", "next / previous view; every view follows the selection"),
    ("1 2 3 4 5 6", "Top, Call tree, Callers, Flame graph, Diagnostics, Threads"),
    ("Enter / a", "show only the chosen thread (Threads) / all threads again"),
    ("↑ ↓ / k j", "move the selection"),
    ("PgUp PgDn Home End", "move by page / to the ends (call tree)"),
    ("→ / l   ← / h", "expand / collapse (tree); move between boxes (flame)"),
    ("+", "toggle the selected node (tree)"),
    ("e", "expand the hot path below the selection (tree)"),
    ("Enter", "zoom into the frame (tree, flame); pick a caller (callers)"),
    ("Backspace / Esc", "zoom out (then: clear the search)"),
    ("s / S", "sort the top functions by the next column / reverse"),
    ("/", "search function names (regex; empty clears)"),
    ("n / N", "next / previous match"),
    ("f", "filter: hide stacks without a match"),
    ("L", "show file:line beside function names"),
    ("K / U", "hide kernel frames (user only) / hide user frames (kernel only)"),
    ("b", "freeze a baseline: Δ self % / Δ total % vs. it (b again clears)"),
    ("r", "reset: forget every count so far"),
    ("m", "time mode: cumulative → last 30 s → decay (½ every 10 s)"),
    ("w", "write the shown (zoomed / filtered) profile as folded stacks"),
    ("p", "change the probe live (checked as you type, Tab completes); each keeps its profile"),
    ("?", "this help"),
)


def help_text() -> str:
    lines = ["[b]bpftop keys[/b]", ""]
    lines += [f"[b]{key:>20}[/b]  {what}" for key, what in KEYS]
    lines += [
        "",
        "Percentages are of all samples (of the matching ones while filtering).",
        "Esc / ? / q closes this help.",
    ]
    return "\n".join(lines)


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
