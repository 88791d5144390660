"""Icicle (root on top) flame-graph layout in terminal cells.

``flame_rows`` lays out a (zoomed) subtree into rows of spans, one row per
depth, each child as wide as its share of its parent. Spans narrower than
one cell are dropped, so the work is bounded by width x depth, not by the
size of the profile. No Textual here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bpftop.tui.model.derived import NodePath
from bpftop.tui.model.snapshot import CallNode

MIN_CELLS = 1.0
"""Children narrower than this are not laid out (nor is anything after them:
children come widest first). At 0.5, 1,333 of the 1,386 boxes of bench.tui_bench's
profile at 200 columns were one-cell slivers, and laying them out took 11 ms
instead of 3."""


@dataclass(frozen=True, slots=True)
class Span:
    """One box: cells ``x`` .. ``x + width - 1`` of its row."""

    x: int
    width: int
    node: CallNode
    path: NodePath


def flame_rows(root: CallNode, root_path: NodePath, width: int, max_depth: int) -> list[list[Span]]:
    """Rows 0..max_depth-1; row 0 is ``root`` across the full width."""
    if width <= 0 or max_depth <= 0 or root.total_count <= 0:
        return []
    rows: list[list[Span]] = [[Span(0, width, root, root_path)]]
    while len(rows) < max_depth:
        below = [span for parent in rows[-1] for span in _children(parent)]
        if not below:
            break
        rows.append(below)
    return rows


def _children(parent: Span) -> list[Span]:
    node = parent.node
    if node.total_count <= 0:
        return []
    scale = parent.width / node.total_count
    spans: list[Span] = []
    done = 0
    for child in node.children_with(math.ceil(MIN_CELLS / scale)):
        x0 = parent.x + int(done * scale)
        done += child.total_count
        x1 = parent.x + int(done * scale)
        if x1 - x0 >= 1:
            spans.append(Span(x0, x1 - x0, child, (*parent.path, child.key)))
    return spans


def span_at(rows: list[list[Span]], path: NodePath) -> tuple[int, int] | None:
    """(row, index) of the span showing ``path``."""
    depth = next((d for d, row in enumerate(rows) if row and len(row[0].path) == len(path)), None)
    if depth is None:
        return None
    for i, span in enumerate(rows[depth]):
        if span.path == path:
            return depth, i
    return None


def is_unnamed(node: CallNode) -> bool:
    """Is ``node`` a frame that could not be named? By its flag; only a frame
    without a module (from a folded file, which keeps no flags) is judged by
    its label (``[unknown]``, ``libfoo.so+0x1a2b``): a named frame shown with
    ``--offsets`` (``main+0x1a``) is named."""
    if node.unresolved:
        return True
    return not node.module and ("+0x" in node.label or node.label == "[unknown]")


def frame_kind(node: CallNode) -> str:
    """What colors a box: kernel, inlined, unknown or user."""
    if node.kernel:
        return "kernel"
    if is_unnamed(node):
        return "unknown"
    if node.inlined:
        return "inlined"
    return "user"
