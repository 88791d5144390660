"""Folded lines of a call tree by walking its nodes: what tests compare the
writers (which read the tree's arrays: ``saved.from_tree``) against."""

from __future__ import annotations

from collections.abc import Iterator

from bpftop.tui.formats.folded import frame_label
from bpftop.tui.model.snapshot import CallNode


def folded_label(node: CallNode) -> str:
    """The frame as it appears between semicolons."""
    return frame_label(node.label, node.kernel, node.inlined)


def folded_lines(tree: CallNode) -> Iterator[str]:
    """One line per node with self samples; the synthetic root is not written."""
    stack: list[tuple[CallNode, tuple[str, ...]]] = [
        (child, (folded_label(child),)) for child in reversed(tree.children)
    ]
    while stack:
        node, path = stack.pop()
        if node.self_count > 0:
            yield f"{';'.join(path)} {node.self_count}"
        for child in reversed(node.children):
            stack.append((child, (*path, folded_label(child))))
