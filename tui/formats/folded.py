"""Folded stacks: the one-line-per-stack text format flame-graph tools read.

A line is ``process;outermost;...;leaf COUNT``. Kernel frames carry a
``_[k]`` suffix (the convention of BCC's ``profile -a``), inline frames an
``_[i]`` suffix (as flamegraph.pl's ``stackcollapse-perf.pl --inline``). Labels are
sanitized so every line written parses back: ``;`` becomes ``:`` and line
breaks become spaces.
"""

from __future__ import annotations

KERNEL_SUFFIX = "_[k]"
INLINE_SUFFIX = "_[i]"

_SANITIZE = str.maketrans({";": ":", "\n": " ", "\r": " ", "\t": " "})


def frame_label(label: str, kernel: bool, inlined: bool) -> str:
    """A frame's text between semicolons: sanitized, ``_[k]`` kernel, ``_[i]`` inlined."""
    label = label.translate(_SANITIZE) or "[unknown]"
    if kernel:
        return label + KERNEL_SUFFIX
    return label + INLINE_SUFFIX if inlined else label
