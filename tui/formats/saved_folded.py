"""Folded stacks to and from a ``SavedProfile``, the differential form, and the folded codec.

Folded text carries no metadata and no modules: a line is
``group;outermost;...;leaf COUNT`` (``tui.formats.folded`` defines it), so a
read-back frame knows its label and whether it is a kernel frame (``_[k]``)
or an inline frame (``_[i]``).
``diff_lines`` writes the two-count lines flamegraph.pl's difference graphs
read: ``stack BASE_COUNT NEW_COUNT``. :data:`CODEC` is the format's entry in
the registry: it streams a call tree's lines without a ``SavedProfile``, and
``view`` builds the tree straight from the text (``folded_tree``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import IO

from bpftop.tui.formats.folded import INLINE_SUFFIX, KERNEL_SUFFIX, frame_label
from bpftop.tui.formats.folded_tree import CountOverflow, folded_tree, parse_folded, parse_lines
from bpftop.tui.formats.folded_tree import cap_depth as cap_depth_lines
from bpftop.tui.formats.registry import Fill, FormatError
from bpftop.tui.formats.saved import (
    LoadedTree,
    ProfileMeta,
    SavedFrame,
    SavedProfile,
    SavedStack,
    cap_depth,
    tree_stacks,
)
from bpftop.tui.formats.sniff import decode_text, drop_bad_lines
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


def write_lines(out: IO[bytes], lines: Iterable[str]) -> int:
    """Write each line and a newline; how many lines."""
    count = 0
    for line in lines:
        out.write(f"{line}\n".encode())
        count += 1
    return count


def _overflow(text: str, err: CountOverflow) -> FormatError:
    """The error naming the first line whose count is ``err.count``."""
    found = re.search(rf"[ \t]{err.count}[ \t]*\r?$", text, re.MULTILINE)
    return FormatError(
        f"count {err.count} does not fit in 64 bits",
        "is this a folded stack file?",
        line=text.count("\n", 0, found.start()) + 1 if found else 0,
    )


class FoldedCodec:
    """Folded text: written line by line, read back line by line (lines that held
    bytes that are not UTF-8, or have no count, are skipped and counted)."""

    def writer(self, saved: SavedProfile, build_ids: Mapping[str, str]) -> Fill:
        return lambda out: write_lines(out, saved_lines(saved))

    def tree_writer(self, tree: CallNode, meta: ProfileMeta, events: CallNode | None) -> Fill:
        return lambda out: write_lines(out, tree_lines(tree))  # no metadata nor events

    def read(self, payload: bytes | str) -> SavedProfile:
        text, bad = drop_bad_lines(_text(payload))
        try:
            saved = from_folded(text)
        except CountOverflow as err:
            raise _overflow(text, err) from None
        return replace(saved, skipped=saved.skipped + bad)

    def read_tree(self, payload: bytes | str) -> LoadedTree:
        text, bad = drop_bad_lines(_text(payload))
        found, skipped = parse_lines(text)
        found, cut = cap_depth_lines(found)
        try:
            return LoadedTree(ProfileMeta(), folded_tree(found), skipped + bad, cut)
        except CountOverflow as err:
            raise _overflow(text, err) from None


def _text(payload: bytes | str) -> str:
    return payload if isinstance(payload, str) else decode_text(payload)


CODEC = FoldedCodec()
