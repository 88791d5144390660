"""Folded stacks to and from a ``SavedProfile``, and the differential form.

Folded text carries no metadata and no modules: a line is
``group;outermost;...;leaf COUNT`` (``tui.model.folded`` defines it), so a
read-back frame knows its label and whether it is a kernel frame (``_[k]``).
``diff_lines`` writes the two-count lines flamegraph.pl's difference graphs
read: ``stack BASE_COUNT NEW_COUNT``.
"""

from __future__ import annotations

from collections.abc import Iterator

from bpftop.tui.model.folded import KERNEL_SUFFIX, read_folded
from bpftop.tui.model.saved import ProfileMeta, SavedFrame, SavedProfile, SavedStack

_SANITIZE = str.maketrans({";": ":", "\n": " ", "\r": " ", "\t": " "})


def frame_text(frame: SavedFrame) -> str:
    """The frame between semicolons, as ``folded.folded_label`` spells a node."""
    label = frame.name.translate(_SANITIZE) or "[unknown]"
    return label + KERNEL_SUFFIX if frame.kernel else label


def stack_text(stack: SavedStack) -> str:
    """``group;outermost;...;leaf`` without the count."""
    group = stack.thread.translate(_SANITIZE) or "[unknown]"
    return ";".join([group, *map(frame_text, stack.frames)])


def saved_lines(saved: SavedProfile) -> Iterator[str]:
    """One folded line per stack, in the profile's order."""
    for stack in saved.stacks:
        yield f"{stack_text(stack)} {stack.count}"


def from_folded(text: str) -> SavedProfile:
    """Parse folded text; lines without a count are counted in ``skipped``."""
    parsed = read_folded(text)
    frames: dict[str, SavedFrame] = {}
    stacks = []
    for names, count in parsed.items():
        path = []
        for name in names[1:]:
            frame = frames.get(name)
            if frame is None:
                kernel = name.endswith(KERNEL_SUFFIX) and len(name) > len(KERNEL_SUFFIX)
                label = name[: -len(KERNEL_SUFFIX)] if kernel else name
                frame = frames[name] = SavedFrame(label, kernel=kernel)
            path.append(frame)
        stacks.append(SavedStack(names[0], tuple(path), count))
    return SavedProfile(ProfileMeta(), tuple(stacks), parsed.skipped)


def diff_lines(base: SavedProfile, new: SavedProfile) -> Iterator[str]:
    """``stack BASE NEW`` for every stack in either profile (absent: 0), new's order first."""
    before: dict[str, int] = {}
    for stack in base.stacks:
        text = stack_text(stack)
        before[text] = before.get(text, 0) + stack.count
    after: dict[str, int] = {}
    for stack in new.stacks:
        text = stack_text(stack)
        after[text] = after.get(text, 0) + stack.count
    for text, count in after.items():
        yield f"{text} {before.get(text, 0)} {count}"
    for text, count in before.items():
        if text not in after:
            yield f"{text} {count} 0"
