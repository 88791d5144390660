"""The key bar at the bottom: the shown bindings of the focused view and the app.

Textual's ``Footer`` recomposes a widget per key whenever focus moves, which
made every view switch cost 70-130 ms at 200x50 (bench.tui_bench). This is
one line of text, rebuilt from the screen's active bindings when focus moves.
"""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static


def key_bar_text(bindings: list[Binding], key_display: dict[str, str], key_style: Style) -> Text:
    """``key description`` pairs, keys highlighted, in binding order."""
    text = Text(no_wrap=True, overflow="ellipsis")
    for binding in bindings:
        if text:
            text.append("  ")
        text.append(key_display.get(binding.key, binding.key), style=key_style)
        text.append(f" {binding.description}")
    return text


class KeyBar(Static):
    """One line of key hints for what has focus."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"keybar--key"}

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom; height: 1; padding: 0 1;
        background: $footer-background; color: $footer-foreground;
    }
    KeyBar > .keybar--key { color: $footer-key-foreground; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._made: dict[type, Text] = {}  # bindings are per class (no check_action here)

    def on_mount(self) -> None:
        self.refresh_keys()

    def refresh_keys(self) -> None:
        """Show the keys of what has focus now (call when focus moves)."""
        focused = type(self.screen.focused)
        text = self._made.get(focused)
        if text is None:
            text = self._made[focused] = self._make()
        self.update(text, layout=False)

    def _make(self) -> Text:
        seen: set[str] = set()
        shown: list[Binding] = []
        display: dict[str, str] = {}
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            shown.append(binding)
        shown.sort(key=lambda binding: binding.action != "help")  # ? Help first: never cut off
        for binding in shown:
            display[binding.key] = binding.key_display or self.app.get_key_display(binding)
        key_style = self.get_component_rich_style("keybar--key", partial=True)
        return key_bar_text(shown, display, key_style)
