"""Folded stacks: the one-line-per-stack text format flame-graph tools read.

A line is ``process;outermost;...;leaf COUNT``. Kernel frames carry a
``_[k]`` suffix (the convention of BCC's ``profile -a``), inline frames an
``_[i]`` suffix (as flamegraph.pl's ``stackcollapse-perf.pl --inline``). Labels are
sanitized so every line written parses back: ``;`` becomes ``:`` and line
breaks become spaces.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO

from bpftop.tui.formats.atomic import write_output
from bpftop.tui.model.snapshot import CallNode

KERNEL_SUFFIX = "_[k]"
INLINE_SUFFIX = "_[i]"

_SANITIZE = str.maketrans({";": ":", "\n": " ", "\r": " ", "\t": " "})


def folded_label(node: CallNode) -> str:
    """The frame as it appears between semicolons."""
    return frame_label(node.label, node.kernel, node.inlined)


def frame_label(label: str, kernel: bool, inlined: bool) -> str:
    """A frame's text between semicolons: sanitized, ``_[k]`` kernel, ``_[i]`` inlined."""
    label = label.translate(_SANITIZE) or "[unknown]"
    if kernel:
        return label + KERNEL_SUFFIX
    return label + INLINE_SUFFIX if inlined else label


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


def write_folded(tree: CallNode, path: str | os.PathLike[str]) -> int:
    """Write ``tree`` as folded stacks to ``path``; return the line count.

    Written by ``atomic.write_output`` (a file atomically, a device or FIFO in
    place); raises ``OutputError`` when it cannot be written, and then no
    temp file is left behind.
    """
    lines = 0

    def fill(out: IO[bytes]) -> None:
        nonlocal lines
        for line in folded_lines(tree):
            out.write(f"{line}\n".encode())
            lines += 1

    write_output(path, fill)
    return lines
