"""Helpers shared by the app's views: their ids and titles, the tab/breadcrumb
line, search jumps, and the call tree's Δ columns against a baseline."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from bpftop.tui.model.derived import Match, NodePath
from bpftop.tui.model.node_paths import next_match, node_at
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.viewstate import ViewState
from bpftop.tui.views.calltree import CallTreeView
from bpftop.tui.views.flame import FlameView
from bpftop.tui.views.top import TopView

CRUMBS = 4
VIEWS: tuple[tuple[str, str], ...] = (
    ("top", "Top functions"),
    ("tree", "Call tree"),
    ("callers", "Callers"),
    ("flame", "Flame graph"),
    ("diag", "Diagnostics"),
    ("threads", "Threads"),
)
TITLES = {
    "top": "Top functions: self %  total %  samples  function  module  trend",
    "tree": "Call tree (top-down): total %  self %  function  module",
    "callers": "Callers (bottom-up) of the selected function: % of its samples",
    "flame": "Flame graph (icicle): ← → ↑ ↓ move, Enter zoom",
    "diag": "Diagnostics: can these numbers be trusted?",
    "threads": "Threads: share of samples (Enter: only this thread, a: all threads)",
}


def breadcrumb_text(
    names: Sequence[str], current: int, state: ViewState, tree: CallNode, show_lines: bool
) -> Text:
    """``1 Top  2 Tree ...  │ all › proc › main  │ /regex/ filter``."""
    text = Text(no_wrap=True, overflow="ellipsis")
    busy = bool(state.zoom or state.pattern or show_lines or state.baseline)
    busy = busy or state.frames != "all" or state.inline_rows or not state.python_functions
    for n, name in enumerate(names):
        if n == current:
            text.append(f" {n + 1} {name} ", "bold reverse")
        else:
            text.append(f" {n + 1} " if busy else f" {n + 1} {name} ", "dim")
    if state.zoom:
        text.append("  │ zoom ", "dim")
        labels = state.breadcrumb(tree)
        if len(labels) > CRUMBS:
            labels = ["…", *labels[-(CRUMBS - 1) :]]
        text.append(" › ".join(labels), "bold")
    if state.pattern:
        text.append("  │ ", "dim")
        text.append(f"/{state.pattern}/", "bold magenta")
        if state.filtering:
            text.append(" filter", "bold reverse magenta")
            text.append(" % of matching stacks", "magenta")  # not of the whole profile
    if state.baseline is not None:
        text.append("  │ ", "dim")
        text.append(f"Δ vs baseline of {state.baseline.total:,}", "bold yellow")
    if state.idle_hidden and tree.total_count:
        text.append("  │ ", "dim")
        share = 100 * state.idle_hidden / tree.total_count
        text.append(f"idle hidden {share:.0f}% (I)", "bold cyan")
    if state.frames != "all":
        text.append("  │ ", "dim")
        text.append(f"{state.frames} frames only", "bold cyan")
    if state.inline_rows:
        text.append("  │ ", "dim")
        text.append("inline rows", "bold green")
    if not state.python_functions:
        text.append("  │ ", "dim")
        text.append("Python by line", "bold cyan")
    if show_lines:
        text.append("  │ file:line", "dim")
    return text


def _cycle(paths: Sequence[NodePath], current: NodePath | None, step: int) -> NodePath | None:
    if not paths:
        return None
    if current is not None and current in paths:
        return paths[(list(paths).index(current) + step) % len(paths)]
    return paths[0] if step > 0 else paths[-1]


def jump_to_match(widget: TopView | CallTreeView | FlameView, match: Match, step: int) -> bool:
    """Select the next (``step`` 1) or previous (-1) match in one view."""
    if isinstance(widget, TopView):
        return _jump_top(widget, match, step)
    if isinstance(widget, FlameView):
        found = _cycle(widget.matching_paths(), widget.selected, step)
        return found is not None and widget.select(found)
    zoom = node_at(widget.call_tree, widget.root_path)
    if zoom is None:
        return False
    root = widget.root_path
    here = widget.cursor_path
    inside = here[len(root) :] if here is not None and here[: len(root)] == root else None
    found = next_match(zoom, match, inside or None, step)
    return found is not None and widget.reveal(root + found)


def _jump_top(table: TopView, match: Match, step: int) -> bool:
    hits = [
        i for i, fn in enumerate(table.ordered) if match(CallNode(fn.label, fn.module, fn.kernel))
    ]
    if not hits:
        return False
    here = table.cursor
    if step > 0:
        target = next((i for i in hits if i > here), hits[0])
    else:
        target = next((i for i in reversed(hits) if i < here), hits[-1])
    table.move_cursor(target)
    return True
