"""Folded stacks to and from a ``SavedProfile``, and the differential form.

Folded text carries no metadata and no modules: a line is
``group;outermost;...;leaf COUNT`` (``tui.formats.folded`` defines it), so a
read-back frame knows its label and whether it is a kernel frame (``_[k]``)
or an inline frame (``_[i]``).
``diff_lines`` writes the two-count lines flamegraph.pl's difference graphs
read: ``stack BASE_COUNT NEW_COUNT``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from bpftop.tui.formats.folded import INLINE_SUFFIX, KERNEL_SUFFIX, frame_label
from bpftop.tui.formats.folded_tree import parse_folded
from bpftop.tui.formats.saved import (
    ProfileMeta,
    SavedFrame,
    SavedProfile,
    SavedStack,
    cap_depth,
    tree_stacks,
)
from bpftop.tui.model.snapshot import CallNode


def frame_text(frame: SavedFrame) -> str:
    """The frame between semicolons (``frame_label`` of its name and kind)."""
    return frame_label(frame.name, frame.kernel, frame.inlined)


def stack_text(stack: SavedStack) -> str:
    """``group;outermost;...;leaf`` without the count."""
    group = frame_label(stack.thread, kernel=False, inlined=False)
    return ";".join([group, *map(frame_text, stack.frames)])


def stack_lines(stacks: Iterable[SavedStack]) -> Iterator[str]:
    """One folded line per stack, in their order."""
    for stack in stacks:
        yield f"{stack_text(stack)} {stack.count}"


def saved_lines(saved: SavedProfile) -> Iterator[str]:
    """One folded line per stack, in the profile's order."""
    return stack_lines(saved.stacks)


def tree_lines(tree: CallNode) -> Iterator[str]:
    """The lines of ``saved_lines(from_tree(tree, meta))`` (folded text has no
    metadata), streamed: the stacks are read from the tree's arrays a chunk
    at a time, and no ``SavedProfile`` is built (at 40,000 stacks of depth
    ~44 its stacks held ~22 MiB: bench.model_scale --write)."""
    return stack_lines(tree_stacks(tree))


class _Frames(dict[str, SavedFrame]):
    """Frame text -> its ``SavedFrame``, made once per distinct text."""

    def __missing__(self, text: str) -> SavedFrame:
        kernel = text.endswith(KERNEL_SUFFIX) and len(text) > len(KERNEL_SUFFIX)
        inlined = not kernel and text.endswith(INLINE_SUFFIX) and len(text) > len(INLINE_SUFFIX)
        name = text[: -len(KERNEL_SUFFIX)] if kernel or inlined else text
        frame = self[text] = SavedFrame(name, kernel=kernel, inlined=inlined)
        return frame


def from_folded(text: str) -> SavedProfile:
    """Parse folded text; lines without a count are counted in ``skipped``, stacks
    deeper than ``MAX_FRAMES`` are cut (``truncated``)."""
    counts, skipped = parse_folded(text)
    frame = _Frames().__getitem__
    stacks = []
    for stack, count in counts.items():
        names = stack.split(";")
        stacks.append(SavedStack(names[0], tuple(map(frame, names[1:])), count))
    return cap_depth(SavedProfile(ProfileMeta(), tuple(stacks), skipped))


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
