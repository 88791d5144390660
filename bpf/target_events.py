"""The ``events`` perf buffer seen from Python: what the kernel told about the targets.

Owns :class:`TargetEvents`: the exits, execs and forks the program reported
(bpftop.h's ``struct event``) and how many records the buffer lost, gathered
by BCC's callbacks while the sampler polls the buffer and taken once per drain.
"""

from __future__ import annotations

import ctypes as ct
import weakref
from dataclasses import dataclass
from typing import Any

from bpftop.bpf.raw import ExitEvent

EVENT_EXIT, EVENT_EXEC, EVENT_FORK, EVENT_LOADED = 1, 2, 3, 4  # bpftop.h


class Event(ct.Structure):
    """bpftop.h's ``struct event`` (BCC learns it from the compile's module;
    a program loaded from an image has none to ask)."""

    _fields_ = [
        ("kind", ct.c_uint32),
        ("tgid", ct.c_uint32),
        ("tid", ct.c_uint32),
        ("comm", ct.c_char * 16),
        ("image", ct.c_uint32),
    ]


@dataclass(frozen=True, slots=True)
class Reported:
    """The events of one drain, in the order the kernel sent them."""

    exits: tuple[ExitEvent, ...] = ()
    execs: tuple[int, ...] = ()
    forks: tuple[int, ...] = ()  # the children
    fork_parents: tuple[int, ...] = ()  # ... and their parents, one for one
    loaded: tuple[int, ...] = ()  # held commands stopped where their libraries are mapped
    lost: int = 0  # records the buffer had no room for


class TargetEvents:
    """Collects the events of one loaded program's ``events`` buffer."""

    def __init__(self, bpf: Any) -> None:
        table = bpf[b"events"]
        table.open_perf_buffer(self._on_event, lost_cb=self._on_lost)
        # Weakly: the table holds our callbacks, and BCC's cleanup must be the
        # one that frees it (its __del__ needs the map still open).
        self._table = weakref.ref(table)
        self._exits: list[ExitEvent] = []
        self._execs: list[int] = []
        self._forks: list[int] = []
        self._fork_parents: list[int] = []
        self._loaded: list[int] = []
        self._lost = 0

    def take(self) -> Reported:
        """What arrived since the last take."""
        reported = Reported(
            tuple(self._exits), tuple(self._execs), tuple(self._forks),
            tuple(self._fork_parents), tuple(self._loaded), self._lost,
        )  # fmt: skip
        self._exits, self._execs, self._forks, self._fork_parents = [], [], [], []
        self._loaded = []
        self._lost = 0
        return reported

    def _on_event(self, cpu: int, data: Any, size: int) -> None:
        if self._table() is None:
            return
        ev = ct.cast(data, ct.POINTER(Event)).contents
        if ev.kind == EVENT_EXIT:
            self._exits.append(ExitEvent(ev.tgid, ev.tid, ev.comm.decode(errors="replace")))
        elif ev.kind == EVENT_EXEC:
            self._execs.append(ev.tgid)
        elif ev.kind == EVENT_LOADED:
            self._loaded.append(ev.tgid)
        elif ev.kind == EVENT_FORK:
            self._forks.append(ev.tgid)  # the event's tid is the parent's tgid
            self._fork_parents.append(ev.tid)

    def _on_lost(self, lost: int) -> None:
        self._lost += lost
