"""A large folded file straight into a call tree, for ``bpftop view`` / ``diff``.

Folded text carries nothing but labels, so the view needs no per-stack
values: one C-level regex pass finds every line, each distinct frame text
gets an id (a chunk of lines split at once, looked up through a dict), the
ids become a matrix of key paths ("all", the group = first frame, frames),
and ``array_tree`` merges the paths into a ``LiveTree`` with array passes.
The tree equals ``to_profile(from_folded(text)).tree()``. ``cap_depth`` cuts
stacks deeper than ``MAX_FRAMES`` first; a count beyond 64 bits raises
``CountOverflow`` (the caller names the file and line). No Textual, no I/O.
"""

from __future__ import annotations

import re
from itertools import compress, repeat
from operator import itemgetter

import numpy as np

from bpftop.tui.formats.folded import INLINE_SUFFIX, KERNEL_SUFFIX
from bpftop.tui.formats.saved import CUT_FRAME, MAX_FRAMES
from bpftop.tui.model.array_tree import first_of_function, merge_paths, merged_root, path_matrix
from bpftop.tui.model.store import INLINED, Ids, LiveNode, NodeKey, TreeStore

_LINE = re.compile(r"^[^\S\n]*(\S[^\n]*) (\d+)[^\S\n]*$", re.MULTILINE)
_NONBLANK = re.compile(r"^[^\S\n]*\S", re.MULTILINE)
_K = len(KERNEL_SUFFIX)
_INT64_MAX = 2**63 - 1
_CHUNK = 50_000
"""Lines split into frame texts at a time (their strings die with the chunk)."""


def parse_lines(text: str) -> tuple[list[tuple[str, str]], int]:
    """(stack text, count text) of every line, and the non-blank lines without a count."""
    found = _LINE.findall(text)
    lines = text.count("\n") + (not text.endswith("\n") and bool(text))
    if len(found) == lines:  # every line has a count: no need to look for blank ones
        return found, 0
    return found, len(_NONBLANK.findall(text)) - len(found)


class CountOverflow(ValueError):
    """A count that does not fit in 64 bits; ``count`` is its text as written."""

    def __init__(self, count: str) -> None:
        super().__init__(f"count {count} does not fit in 64 bits")
        self.count = count


def parse_folded(text: str) -> tuple[dict[str, int], int]:
    """Stack text -> summed count, and the number of non-blank lines without a count."""
    found, skipped = parse_lines(text)
    counts: dict[str, int] = {}
    get = counts.get
    for stack, count in found:
        value = int(count)
        if value > _INT64_MAX:
            raise CountOverflow(count)
        counts[stack] = get(stack, 0) + value
    return counts, skipped


def cap_depth(
    found: list[tuple[str, str]], max_frames: int = MAX_FRAMES
) -> tuple[list[tuple[str, str]], int]:
    """Stacks deeper than ``max_frames`` cut to that many frames, the last ``CUT_FRAME``;
    and how many were cut. (The group before the first ``;`` is not a frame.)"""
    depths = list(map(str.count, map(itemgetter(0), found), repeat(";")))
    if max(depths, default=0) <= max_frames:
        return found, 0
    out, cut = [], 0
    for (stack, count), depth in zip(found, depths, strict=True):
        if depth > max_frames:
            kept = stack.split(";", max_frames)[:max_frames]
            stack, cut = ";".join([*kept, CUT_FRAME]), cut + 1
        out.append((stack, count))
    return out, cut


class _TextIds(dict[str, int]):
    """Frame text -> id, numbered in order of first sight."""

    def __missing__(self, text: str) -> int:
        found = self[text] = len(self)
        return found


def folded_tree(found: list[tuple[str, str]]) -> LiveNode:
    """The call tree ("all" -> first frames as groups -> ...) of ``parse_lines``' lines."""
    try:
        counts = np.fromiter(map(int, map(itemgetter(1), found)), np.int64, len(found))
    except OverflowError:
        raise CountOverflow(next(c for _, c in found if int(c) > _INT64_MAX)) from None
    stacks = list(map(itemgetter(0), found))
    if not counts.all():
        positive = counts > 0
        stacks, counts = list(compress(stacks, positive.tolist())), counts[positive]
    lengths = np.fromiter(map(str.count, stacks, [";"] * len(stacks)), np.int64, len(stacks)) + 1
    text_ids, texts = _text_ids(stacks, int(lengths.sum()))
    store = TreeStore()  # only its key interning: key 0 is the root's
    frame_key = np.array([store.key_of(_frame_key(text)) for text in texts], np.int32)
    group_key = np.zeros(len(texts), np.int32)
    starts = np.cumsum(lengths) - lengths
    for text in np.unique(text_ids[starts]).tolist():
        group_key[text] = store.key_of((texts[text], "", False))
    cells = frame_key[text_ids]
    cells[starts] = group_key[text_ids[starts]]
    paths = path_matrix(cells, lengths)
    merged = merge_paths(paths, counts)
    flags = first_of_function(paths, merged, 2)
    inline = np.array([text.endswith(INLINE_SUFFIX) for text in texts], np.bool_)
    if inline.any():  # a node is inline when the text it was first seen as is (``_[i]``)
        first_text = path_matrix(text_ids, lengths)[merged.row, merged.column]
        flags |= np.where((merged.depth >= 2) & inline[first_text], INLINED, 0).astype(np.uint8)
    return merged_root(merged, flags, store.keys, store.key_ids)


def _text_ids(stacks: list[str], cells: int) -> tuple[Ids, list[str]]:
    """Every frame text's id, stacks one after the other, and the texts by id."""
    ids = _TextIds()
    lookup = ids.__getitem__
    out = np.empty(cells, np.int32)
    at = 0
    for start in range(0, len(stacks), _CHUNK):
        texts = ";".join(stacks[start : start + _CHUNK]).split(";")
        out[at : at + len(texts)] = np.fromiter(map(lookup, texts), np.int32, len(texts))
        at += len(texts)
    return out, list(ids)


def _frame_key(text: str) -> NodeKey:
    if text.endswith(KERNEL_SUFFIX) and len(text) > _K:
        return (text[:-_K], "", True)
    if text.endswith(INLINE_SUFFIX) and len(text) > _K:
        return (text[:-_K], "", False)
    return (text, "", False)
