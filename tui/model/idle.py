"""Idle Python samples: what they are, and a call tree without them.

An offcpu sample (a block) is *idle* when its innermost Python frame is a
known waiting call, py-spy's heuristic
(``_heuristic_is_thread_idle`` in its python_spy.rs, read for the facts):
``wait`` in ``threading.py`` (``Condition.wait``, hence ``queue.Queue.get``,
``Event.wait``, a pool thread waiting for work), ``select`` in
``selectors.py`` (an event loop with nothing to do), or ``poll`` in
``asyncore.py`` or a file whose path names zmq, gevent or tornado. A sample
without Python frames is never idle (native code may be busy), nor is one
whose innermost Python frame is anything else (``time.sleep`` in user code
is the code's own wait: it stays). py-spy asks the OS first whether the
thread runs, and a running thread is never idle: so a CPU sample or a probe
hit (a running thread by definition) is never idle here either, and only
offcpu profiles are filtered (:func:`idle_applies`); an offcpu sample is a
blocked thread by definition, and the heuristic tells waiting for work from
blocking in it.

The live view hides idle samples by default (py-spy's default; ``I`` shows
them) and says how much it hides; ``--idle`` starts with them shown, and
makes ``record`` keep them. :func:`drop_idle` works on the tree's arrays
like the other derived views (``views.py``). No Textual here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from bpftop.symbols.frame import Frame
from bpftop.symbols.python.code import is_python_frame
from bpftop.tui.model.array_tree import array_tree
from bpftop.tui.model.snapshot import CallNode, Snapshot, ThreadShare
from bpftop.tui.model.store import ROOT, NodeKey

_BUSY, _IDLE = 1, 2  # the innermost Python frame so far: none (0), busy, idle


def is_idle_call(label: str, module: str) -> bool:
    """True for a Python frame (``QUALNAME (FILE:LINE)`` or ``QUALNAME (FILE)``)
    of one of the waiting calls listed in the module docstring."""
    if not module or not is_python_frame(label, module):
        return False
    cut = label.rfind(f" ({module}")
    name = label[:cut].rsplit(".", 1)[-1] if cut > 0 else ""
    file = os.path.basename(module)
    if name == "wait":
        return file == "threading.py"
    if name == "select":
        return file == "selectors.py"
    if name == "poll":
        return file == "asyncore.py" or any(p in module for p in ("zmq", "gevent", "tornado"))
    return False


def idle_applies(probe: str) -> bool:
    """Whether samples of ``probe`` (a snapshot's ``stats.probe``) can be idle:
    only blocks of offcpu are samples of threads that do not run."""
    return probe.split(":", 1)[0] == "offcpu"


def stack_is_idle(frames: Sequence[Frame]) -> bool:
    """Whether a stack (root first) is idle: its innermost Python frame is a wait."""
    for frame in reversed(frames):
        label = frame.label
        if is_python_frame(label, frame.module):
            return is_idle_call(label, frame.module)
    return False


def busy_threads(threads: Sequence[ThreadShare]) -> tuple[ThreadShare, ...]:
    """The Threads view without idle samples: each thread's other samples,
    hottest first; a thread with no other samples (idle all along) is left out."""
    busy = [replace(t, samples=t.samples - t.idle, idle=0) for t in threads if t.samples > t.idle]
    busy.sort(key=lambda t: (-t.samples, t.tid))
    return tuple(busy)


def _kinds(keys: list[NodeKey]) -> np.ndarray:
    """Per distinct key: 0 not a Python frame, _BUSY, _IDLE."""
    return np.fromiter(
        (
            _IDLE if is_idle_call(label, module) else _BUSY if is_python_frame(label, module) else 0
            for label, module, kernel in keys
        ),
        np.int8,
        len(keys),
    )


def has_idle(tree: CallNode) -> bool:
    """Whether any frame of ``tree`` is an idle call (a scan of its distinct keys)."""
    live = array_tree(tree)
    return any(is_idle_call(label, module) for label, module, _ in live.keys)


def drop_idle(tree: CallNode) -> tuple[CallNode, int]:
    """``tree`` without its idle samples, and how many it dropped (in the
    tree's unit: samples, or ns for time probes). ``tree`` itself when none."""
    live = array_tree(tree)
    if not any(is_idle_call(label, module) for label, module, _ in live.keys):
        return tree, 0
    kind = _kinds(live.keys)[live.key_id]
    kind[ROOT] = 0
    levels = live.levels()
    parent = live.parent
    for level in levels[1:]:  # top-down: the innermost Python frame at or above each node
        kind[level] = np.where(kind[level] != 0, kind[level], kind[parent[level]])
    idle = kind == _IDLE
    hidden = int(live.self_count[idle].sum())
    self_count = np.where(idle, 0, live.self_count)
    total = self_count.copy()
    for level in reversed(levels[1:]):  # bottom-up
        np.add.at(total, parent[level], total[level])
    return live.with_counts(self_count, total).root(), hidden


def snapshot_without_idle(snap: Snapshot) -> tuple[Snapshot, int, float]:
    """``snap`` without its idle samples (``record`` without ``--idle``): the
    snapshot, how many samples (events, for a time probe) were left out, and
    their share of the tree's total (samples, or ns). ``snap`` itself unless
    its probe's samples can be idle (:func:`idle_applies`)."""
    if not idle_applies(snap.stats.probe):
        return snap, 0, 0.0
    tree, hidden = drop_idle(snap.tree)
    if not hidden:
        return snap, 0, 0.0
    share = hidden / max(snap.tree.total_count, 1)
    events, hidden_events = snap.events_tree, hidden
    if events is not None:
        events, hidden_events = drop_idle(events)
    stats = replace(snap.stats, total_samples=max(snap.stats.total_samples - hidden_events, 0))
    return replace(snap, tree=tree, events_tree=events, stats=stats), hidden_events, share
