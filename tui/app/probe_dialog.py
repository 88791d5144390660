"""The probe dialog (`p`): type a spec, see at once whether it can be attached.

Each keystroke re-checks the spec (the same parse and resolution the switch
does, via :class:`ProbeCompleter`) and lists completions: probe kinds, event
and tracepoint names, the targets' binaries and libraries, their functions.
Tab takes the first completion, ↓ moves into the list, Enter switches to a
valid spec (dismissing with its text), Esc leaves the running probe as it is.
The probes used before in this session are listed while nothing is typed,
the latest first: ↑ in the field brings them back one by one, as a shell's
history does, and Enter on one in the list switches to it at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static

from bpftop.tui.collect.probe_complete import ProbeCompleter

PLACEHOLDER = "probe: profile:hz:99, uprobe:c:malloc, uretprobe:BIN:FUNC, tracepoint:…, offcpu"


class ProbeDialog(ModalScreen[str | None]):
    """Returns the spec to switch to, or None. ``used``: the probes to switch
    back to, the latest first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("tab", "take_first", "Complete", priority=True),
        Binding("down", "into_list", "Choices", show=False),
        Binding("up", "recall", "Recent", show=False),
    ]

    DEFAULT_CSS = """
    ProbeDialog { align: center top; }
    ProbeDialog > Vertical {
        width: 90%; height: auto; max-height: 24; margin-top: 3;
        border: round $accent; background: $panel; padding: 0 1;
    }
    ProbeDialog #verdict { height: 1; }
    ProbeDialog OptionList { height: auto; max-height: 14; }
    """

    def __init__(
        self, completer: ProbeCompleter, used: Sequence[str] = (), active: str = ""
    ) -> None:
        super().__init__()
        self.completer = completer
        self.used = tuple(used)
        self.active = active
        self.verdict = ""
        self._recalled = -1  # the entry of ``used`` ↑ last put in the field

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Input(placeholder=PLACEHOLDER, id="spec")
            yield Static(id="verdict")
            yield OptionList(id="choices")

    def on_mount(self) -> None:
        self._show_choices(self.used)
        self.query_one("#verdict", Static).update(
            Content.assemble(
                "now: ", (self.active, "bold"), "  (Enter switches, Tab completes, Esc cancels)"
            )
        )
        self.query_one("#spec", Input).focus()

    def on_input_changed(self, message: Input.Changed) -> None:
        message.stop()  # the dialog's own: nothing behind it acts on its text
        text = message.value.strip()
        self._show_choices(self.completer.complete(text) if text else self.used)
        self._judge(text)

    def _judge(self, text: str) -> None:
        verdict = self.query_one("#verdict", Static)
        if not text:
            self.verdict = ""
            verdict.update("")
            return
        self.verdict = self.completer.check(text)
        if self.verdict:
            verdict.update(Content.styled(f"✗ {self.verdict}", "red"))  # not markup: names
        else:
            verdict.update(Content.assemble((f"✓ {text}", "green"), " — Enter switches to it"))

    def _show_choices(self, choices: Sequence[str]) -> None:
        options = self.query_one("#choices", OptionList)
        options.clear_options()
        options.add_options(list(choices))

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        message.stop()
        text = str(message.option.prompt)
        if text in self.used and not self.completer.check(text):
            self.dismiss(text)  # a probe used before: back to it at once
            return
        self._set(text)

    def action_recall(self) -> None:
        """The next older probe used before into the field (↑ again: the one before)."""
        field = self.query_one("#spec", Input)
        current = self.used[self._recalled] if self._recalled >= 0 else ""
        if not self.used or field.value.strip() not in ("", current):
            return  # typed text is not replaced
        self._recalled = min(self._recalled + 1, len(self.used) - 1)
        self._set(self.used[self._recalled])

    def action_take_first(self) -> None:
        options = self.query_one("#choices", OptionList)
        if options.option_count:
            index = options.highlighted if options.highlighted is not None else 0
            self._set(str(options.get_option_at_index(index).prompt))

    def action_into_list(self) -> None:
        options = self.query_one("#choices", OptionList)
        if options.option_count:
            options.focus()
            options.highlighted = 0

    def _set(self, text: str) -> None:
        field = self.query_one("#spec", Input)
        field.value = text
        field.cursor_position = len(text)
        field.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()  # a spec, not a search: the app's search box never sees it
        text = message.value.strip()
        if text and not self.completer.check(text):
            self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


def latest_first(used: Sequence[str], chosen: Sequence[str], active: str) -> tuple[str, ...]:
    """The probes to offer to switch back to: those chosen in the dialog, the
    latest first, then the others used (the start's probe), never the active one."""
    order = [*reversed(chosen), *reversed(used)]
    return tuple(p for p in dict.fromkeys(order) if p != active and p in used)
