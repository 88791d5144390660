"""The call tree of a large saved profile, built in time proportional to its nodes.

``Profile.add`` walks every frame of every stack (right for a live profile
that grows a tick at a time); a saved profile is known whole, so
``build_tree`` sorts its stacks as tuples of frame ids (C-level
comparisons), walks them in order keeping the previous stack's path, and
creates only the nodes a stack does not share with the one before it.
Totals are summed and children ordered once, when freezing. The result
equals ``to_profile(saved).tree()`` (a frame's kind, source and flags come
from the first frame of its key). No Textual, no I/O.
"""

from __future__ import annotations

import operator
from typing import Any

from bpftop.tui.model.folded_tree import common_prefix
from bpftop.tui.model.saved import SavedFrame, SavedProfile
from bpftop.tui.model.snapshot import CallNode

_BY_KEY = operator.attrgetter("label", "module", "kernel")
_BY_TOTAL = operator.attrgetter("total_count")

_Node = list[Any]  # [id, self_count, children: dict[id, _Node]]


class _Ids(dict[SavedFrame, int]):
    """Frame -> id of its (label, module, kernel) key; ``frames[id]`` describes the key."""

    def __init__(self) -> None:
        super().__init__()
        self.by_key: dict[tuple[str, str, bool], int] = {}
        self.frames: list[SavedFrame] = []

    def __missing__(self, frame: SavedFrame) -> int:
        key = (frame.name, frame.module, frame.kernel)
        found = self.by_key.get(key)
        if found is None:
            found = self.by_key[key] = len(self.frames)
            self.frames.append(frame)
        self[frame] = found
        return found


def build_tree(saved: SavedProfile) -> CallNode:
    """The call tree "all" -> stack groups -> outermost frames -> ..."""
    ids = _Ids()
    groups: dict[str, int] = {}
    counts: dict[tuple[int, ...], int] = {}
    lookup = ids.__getitem__
    for stack in saved.stacks:
        if stack.count <= 0:
            continue
        group = groups.setdefault(stack.thread, -1 - len(groups))  # below every frame id
        path = (group, *map(lookup, stack.frames))
        counts[path] = counts.get(path, 0) + stack.count
    root: _Node = [None, 0, {}]
    trail = [root]
    previous: tuple[int, ...] = ()
    for path in sorted(counts):
        shared = common_prefix(previous, path)
        del trail[shared + 1 :]
        node = trail[-1]
        for key in path[shared:]:
            children = node[2]
            child = children.get(key)
            if child is None:
                child = children[key] = [key, 0, {}]
            trail.append(child)
            node = child
        node[1] += counts[path]
        previous = path
    names = {group: name for name, group in groups.items()}
    return _freeze(root, ids.frames, names)


def _freeze(node: _Node, frames: list[SavedFrame], groups: dict[int, str]) -> CallNode:
    kids = [_freeze(child, frames, groups) for child in node[2].values()]
    if len(kids) > 1:
        kids.sort(key=_BY_KEY)
        kids.sort(key=_BY_TOTAL, reverse=True)
    total = node[1] + sum(map(_BY_TOTAL, kids))
    key = node[0]
    if key is None:
        return CallNode("all", total_count=total, children=tuple(kids))
    if key < 0:
        return CallNode(groups[key], "", False, node[1], total, tuple(kids))
    f = frames[key]
    return CallNode(
        f.name, f.module, f.kernel, node[1], total, tuple(kids), f.source, f.inlined, f.unresolved
    )
