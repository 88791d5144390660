"""A large folded file straight into a call tree, for ``bpftop view`` / ``diff``.

Folded text carries nothing but labels, so the view needs no per-stack
values: ``parse_folded`` matches every line with one C-level regex pass,
and ``folded_tree`` walks the stacks in sorted order, finds how much of a
stack it shares with the previous one by comparing string slices (C
level), and splits and creates only the frames that are new. The tree
equals ``build_tree(from_folded(text))`` and so ``to_profile(...).tree()``.
No Textual, no I/O.
"""

from __future__ import annotations

import operator
import re
from typing import Any, TypeVar

from bpftop.tui.model.folded import KERNEL_SUFFIX
from bpftop.tui.model.snapshot import CallNode

_LINE = re.compile(r"^[^\S\n]*(\S[^\n]*) (\d+)[^\S\n]*$", re.MULTILINE)
_NONBLANK = re.compile(r"^[^\S\n]*\S", re.MULTILINE)
_BY_KEY = operator.attrgetter("label", "module", "kernel")
_BY_TOTAL = operator.attrgetter("total_count")
_K = len(KERNEL_SUFFIX)
Prefixed = TypeVar("Prefixed", str, tuple[int, ...])


def parse_folded(text: str) -> tuple[dict[str, int], int]:
    """Stack text -> summed count, and the number of non-blank lines without a count."""
    counts: dict[str, int] = {}
    get = counts.get
    matched = 0
    for stack, count in _LINE.findall(text):
        counts[stack] = get(stack, 0) + int(count)
        matched += 1
    return counts, len(_NONBLANK.findall(text)) - matched


def common_prefix(a: Prefixed, b: Prefixed) -> int:
    """Length of the common prefix of two strings or tuples, by bisection over slices."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def folded_tree(counts: dict[str, int]) -> CallNode:
    """The call tree of parsed folded stacks ("all" -> first frames as groups -> ...)."""
    root: list[Any] = ["", 0, {}]
    trail = [root]
    previous = ""
    for stack in sorted(counts):
        count = counts[stack]
        if count <= 0:
            continue
        common = common_prefix(previous, stack)
        frames = stack.count(";", 0, common)
        start = stack.rfind(";", 0, common) + 1
        at_end = common == len(stack) or stack[common] == ";"
        if at_end and (common == len(previous) or previous[common] == ";"):
            frames, start = frames + 1, common + 1  # the frame ending here is shared too
        del trail[frames + 1 :]
        node = trail[-1]
        if start <= len(stack):
            for text in stack[start:].split(";"):
                children = node[2]
                child = children.get(text)
                if child is None:
                    child = children[text] = [text, 0, {}]
                trail.append(child)
                node = child
        node[1] += count
        previous = stack
    return _freeze(root, 0)


def _freeze(node: list[Any], depth: int) -> CallNode:
    children: dict[str, list[Any]] = node[2]
    own: int = node[1]
    kids: tuple[CallNode, ...]
    if not children:  # most nodes: no list, no sort
        kids, total = (), own
    elif len(children) == 1:
        for child in children.values():
            kids = (_freeze(child, depth + 1),)
        total = own + kids[0].total_count
    else:
        ordered = [_freeze(child, depth + 1) for child in children.values()]
        ordered.sort(key=_BY_KEY)
        ordered.sort(key=_BY_TOTAL, reverse=True)
        kids, total = tuple(ordered), own + sum(map(_BY_TOTAL, ordered))
    text: str = node[0]
    if depth == 0:
        return CallNode("all", total_count=total, children=kids)
    if depth > 1 and text.endswith(KERNEL_SUFFIX) and len(text) > _K:
        return CallNode(text[:-_K], "", True, own, total, kids)
    return CallNode(text, "", False, own, total, kids)
