"""The call tree of a large saved profile (speedscope, pprof), built in array passes.

``Profile.add`` walks every frame of every stack (right for a live profile
that grows a tick at a time); a saved profile is known whole, so
``build_tree`` turns its stacks into a matrix of key paths ("all", the
group, frames) and ``array_tree`` merges them into a ``LiveTree``. The result
equals ``to_profile(saved).tree()`` (a frame's source and flags come from the
first frame of its key). No Textual, no I/O.
"""

from __future__ import annotations

import numpy as np

from bpftop.tui.formats.saved import SavedFrame, SavedProfile
from bpftop.tui.model.array_tree import first_of_function, merge_paths, merged_root, path_matrix
from bpftop.tui.model.store import INLINED, UNRESOLVED, LiveNode, TreeStore


class _Ids(dict[SavedFrame, int]):
    """Frame -> id of its (label, module, kernel) key in ``store``; ``first[id]``
    is the first frame seen of that key."""

    def __init__(self, store: TreeStore) -> None:
        super().__init__()
        self.store = store
        self.first: dict[int, SavedFrame] = {}

    def __missing__(self, frame: SavedFrame) -> int:
        found = self[frame] = self.store.key_of((frame.name, frame.module, frame.kernel))
        self.first.setdefault(found, frame)
        return found


def build_tree(saved: SavedProfile) -> LiveNode:
    """The call tree "all" -> stack groups -> outermost frames -> ..."""
    store = TreeStore()  # only its key interning: key 0 is the root's
    ids = _Ids(store)
    # Readers share one object per distinct frame: ids of objects hash faster than frames.
    by_identity: dict[int, int] = {}
    known = by_identity.__getitem__
    cells: list[int] = []
    lengths: list[int] = []
    counts: list[int] = []
    for stack in saved.stacks:
        if stack.count > 0:
            try:
                row = list(map(known, map(id, stack.frames)))
            except KeyError:
                row = [by_identity.setdefault(id(frame), ids[frame]) for frame in stack.frames]
            cells.append(store.key_of((stack.thread, "", False)))
            cells.extend(row)
            lengths.append(len(stack.frames) + 1)
            counts.append(stack.count)
    paths = path_matrix(np.array(cells, np.int32), np.array(lengths, np.int64))
    merged = merge_paths(paths, np.array(counts, np.int64))
    key_id = merged.key_id
    key_flags = np.zeros(len(store.keys), np.uint8)
    sources: dict[int, str] = {}
    for key, frame in ids.first.items():
        key_flags[key] = (INLINED if frame.inlined else 0) | (UNRESOLVED if frame.unresolved else 0)
    frames = merged.depth >= 2
    flags = first_of_function(paths, merged, 2) | np.where(frames, key_flags[key_id], 0)
    sourced = {key: frame.source for key, frame in ids.first.items() if frame.source}
    if sourced:
        at = np.flatnonzero(frames & np.isin(key_id, np.fromiter(sourced, np.int32)))
        sources = {
            node: sourced[key] for node, key in zip(at.tolist(), key_id[at].tolist(), strict=True)
        }
    start_lines = {store.keys[key]: f.start_line for key, f in ids.first.items() if f.start_line}
    return merged_root(
        merged, flags.astype(np.uint8), store.keys, store.key_ids, sources, start_lines
    )
