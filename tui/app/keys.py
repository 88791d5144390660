"""Every key of the live view: the app's bindings, and the key help made from
all bindings, for the ``?`` screen and README's "Keys" table.

The views declare their own bindings (``BINDINGS`` on each view class);
``KEY_HELP`` says, once, what each action does. The key column of the help
is read from the bindings, so a key changed in a binding changes the help;
tests/tui/test_keys.py fails when a binding has no help row, and when
README's table differs from ``markdown_table()`` (scripts/readme_keys.py
writes it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from textual.binding import Binding, BindingType

from bpftop.tui.views.calltree import CallTreeView
from bpftop.tui.views.diagnostics import DiagnosticsView
from bpftop.tui.views.flame import FlameView
from bpftop.tui.views.navigation import VIEWS
from bpftop.tui.views.threads import ThreadsView
from bpftop.tui.views.top import TopView
from bpftop.tui.widgets.rows_view import RowsView

APP_BINDINGS: list[BindingType] = [
    Binding("q", "quit", "Quit"),
    Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    Binding("space", "toggle_pause", "Pause"),
    Binding("tab", "next_view(1)", "Next view", priority=True),
    Binding("shift+tab", "next_view(-1)", "Prev view", show=False, priority=True),
    *(
        Binding(str(n), f"show_view({n - 1})", name, show=False)
        for n, (_, name) in enumerate(VIEWS, 1)
    ),
    Binding("backspace,escape", "zoom_out", "Zoom out", key_display="⌫"),
    Binding("slash", "search", "Search", key_display="/"),
    Binding("n", "jump(1)", "Next match", show=False),
    Binding("N", "jump(-1)", "Prev match", show=False),
    Binding("f", "toggle_filter", "Filter"),
    Binding("L", "toggle_lines", "Lines", show=False),
    Binding("i", "toggle_inline", "Inline rows", show=False),
    Binding("F", "toggle_short_names", "Short names", show=False),
    Binding("b", "toggle_baseline", "Baseline"),
    Binding("K", "only_frames('user')", "User only", show=False),
    Binding("U", "only_frames('kernel')", "Kernel only", show=False),
    Binding("P", "only_frames('python')", "Python only", show=False),
    Binding("G", "toggle_python_functions", "Python by line", show=False),
    Binding("I", "toggle_idle", "Idle", show=False),
    Binding("r", "reset", "Reset"),
    Binding("m", "cycle_time_mode", "Time mode"),
    Binding("a", "all_threads", "All threads", show=False),
    Binding("w", "write_folded", "Write folded"),
    Binding("p", "probe", "Probe"),
    Binding("question_mark", "help", "Help", key_display="?"),
]
"""The app's own keys (``BpftopApp.BINDINGS``); the key bar shows those with ``show``."""

BOUND: tuple[Sequence[BindingType], ...] = (
    APP_BINDINGS,
    RowsView.BINDINGS,
    CallTreeView.BINDINGS,
    TopView.BINDINGS,
    FlameView.BINDINGS,
    DiagnosticsView.BINDINGS,
    ThreadsView.BINDINGS,
)
"""Where the help reads keys from: the app's bindings, then each view class's own."""


@dataclass(frozen=True, slots=True)
class KeyHelp:
    """One row of the key help: what the keys bound to ``actions`` do.

    ``actions``: action names without arguments (``jump`` for ``jump(1)`` and
    ``jump(-1)``), space-separated; their keys are listed in this order. In
    ``what``, `backticks` mark keys and literal text."""

    actions: str
    what: str


KEY_HELP: tuple[KeyHelp, ...] = (
    KeyHelp("quit", "quit"),
    KeyHelp("toggle_pause", "pause the display (sampling continues); again to catch up"),
    KeyHelp(
        "next_view show_view",
        "next / previous view, or one by number: Top, Call tree, Callers, Flame graph, "
        "Diagnostics, Threads; every view follows the selection",
    ),
    KeyHelp(
        "cursor_up cursor_down parent child page_up page_down first last scroll_by page",
        "move: a row, a page, to the first / last row (the flame graph: to the caller, "
        "to the widest callee, a page of levels, to the root, to the deepest frame)",
    ),
    KeyHelp(
        "expand collapse toggle_node sibling",
        "expand, collapse (or go to the parent), toggle a call-tree node; "
        "the box left / right in the flame graph",
    ),
    KeyHelp("expand_hot_path", "expand the hottest path below the selected call-tree node"),
    KeyHelp(
        "activate choose",
        "zoom into a frame (tree, flame); choose a caller (callers); "
        "show only this thread (threads)",
    ),
    KeyHelp("zoom_out", "zoom out, then clear the search (in the search box: close it)"),
    KeyHelp(
        "next_sort reverse_sort",
        "sort the top functions by the next column, reverse the order "
        "(a click on a column title sorts by it)",
    ),
    KeyHelp(
        "search jump toggle_filter",
        "search function names (regex; empty clears), next / previous match, "
        "filter: only the stacks with a match",
    ),
    KeyHelp(
        "toggle_lines", "show `file:line` beside function names (DWARF, resolved only while shown)"
    ),
    KeyHelp(
        "toggle_short_names",
        "C++ names short, as perf shows them: no parameters, no return type (again: in "
        "full; `--names short` starts so); counts start again",
    ),
    KeyHelp(
        "toggle_inline",
        "top functions: inline frames as their own rows (again: their time counts for "
        "the function they were inlined into, as in `perf top`)",
    ),
    KeyHelp(
        "toggle_python_functions",
        "Python frames by line, `QUALNAME (FILE:LINE)` (again: by function, `QUALNAME (FILE)`, "
        "the default, as in py-spy top)",
    ),
    KeyHelp(
        "toggle_idle",
        "offcpu: show idle Python samples (innermost frame a known wait: threading's "
        "`wait`, `selectors`' `select`; hidden by default, as in py-spy; again: hide them)",
    ),
    KeyHelp(
        "only_frames",
        "user frames only, kernel frames only (again: all frames); Python frames only, "
        "again: native frames only (the interpreter's own, live), again: merged",
    ),
    KeyHelp("all_threads", "all threads again"),
    KeyHelp(
        "toggle_baseline",
        "freeze a baseline: Δ self % and Δ total % show the change since (again: off)",
    ),
    KeyHelp("reset", "reset: forget every count so far"),
    KeyHelp("cycle_time_mode", "time mode: cumulative → last 30 s → decay (½ every 10 s)"),
    KeyHelp(
        "write_folded",
        "write the shown (zoomed, filtered) profile as folded stacks to "
        "`bpftop-YYYYmmdd-HHMMSS.folded`",
    ),
    KeyHelp(
        "probe",
        "change the probe: checked as you type, `Tab` completes (kinds, events, tracepoints, "
        "the targets' libraries and functions, each once), `Enter` switches, `Esc` keeps the "
        "probe; the probes used before are listed, the latest first: `↑` brings them back",
    ),
    KeyHelp("help", "list the keys (`Esc`, `?` or `q` closes the list)"),
)

KEY_NAMES = {
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
    "enter": "Enter",
    "escape": "Esc",
    "backspace": "Backspace",
    "tab": "Tab",
    "shift+tab": "Shift+Tab",
    "ctrl+c": "Ctrl+C",
    "slash": "/",
    "question_mark": "?",
    "plus": "+",
    "equals_sign": "=",
}
"""How the help names keys (Textual's names otherwise: ``q``, ``space``, ``N``)."""


def action_name(binding: Binding) -> str:
    """``jump`` for ``jump(1)``."""
    return binding.action.split("(", 1)[0]


def bindings(bound: Sequence[Sequence[BindingType]] = BOUND) -> Iterator[Binding]:
    """Each declared binding (a ``"up,k"`` binding stays one), as a ``Binding``."""
    for declared in bound:
        for item in declared:
            yield item if isinstance(item, Binding) else Binding(*item)


def key_groups(row: KeyHelp, bound: Sequence[Sequence[BindingType]] = BOUND) -> list[list[str]]:
    """The keys of ``row``, named, one group per binding (``["↑", "k"]``), in the
    order of its actions; a key already listed (another view's) is not repeated."""
    seen: set[str] = set()
    groups: list[list[str]] = []
    for action in row.actions.split():
        for binding in bindings(bound):
            if action_name(binding) != action:
                continue
            keys = [k.strip() for k in binding.key.split(",") if k.strip() not in seen]
            seen.update(keys)
            if keys:
                groups.append([KEY_NAMES.get(k, k) for k in keys])
    return groups


def _joined(groups: list[list[str]], mark: str) -> str:
    """Groups as text, each key between ``mark``s: ``↑/k, ↓/j``; three or more
    digits in a row as a range (``1-6``)."""

    def name(key: str) -> str:
        return f"{mark}{key}{mark}"

    parts: list[str] = []
    i = 0
    while i < len(groups):
        j = i
        while j < len(groups) and _next_digit(groups, i, j):
            j += 1
        if j - i > 2:
            parts.append(f"{name(groups[i][0])}-{name(groups[j - 1][0])}")
            i = j
        else:
            parts.append("/".join(name(key) for key in groups[i]))
            i += 1
    return ", ".join(parts)


def _next_digit(groups: list[list[str]], first: int, at: int) -> bool:
    """Whether group ``at`` continues a run of single digits that starts at ``first``."""
    group = groups[at]
    if len(group) != 1 or not group[0].isdigit() or len(group[0]) != 1:
        return False
    return at == first or int(group[0]) == int(groups[at - 1][0]) + 1


def keys_text(row: KeyHelp) -> str:
    """The keys of ``row`` as the help screen shows them: ``↑/k, ↓/j``."""
    return _joined(key_groups(row), "")


def markdown_table() -> str:
    """README's "Keys" table."""
    lines = ["| key | what it does |", "|---|---|"]
    lines += [f"| {_joined(key_groups(row), '`')} | {row.what} |" for row in KEY_HELP]
    return "\n".join(lines) + "\n"
