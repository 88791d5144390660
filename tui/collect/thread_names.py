"""Names of the sampled threads: the kernel's comm, or Python's ``threading`` name.

Owns :class:`ThreadNames` (tid -> name for every process sampled: -p -p,
--children, -a). A thread is named from /proc once, when first sampled (an
exit names it again: its last name). A thread of a verified CPython (3.11-3.14)
process is named as ``threading`` names it (``worker-a``; its comm is the
interpreter's, ``python3``, for every thread), read from the process's
memory (:class:`~bpftop.symbols.python.threads.PythonThreadNames`) when a
thread of it is first sampled, at most once per ``PYTHON_READ_S`` per
process (a new thread seen sooner waits for the next tick past it), and
once more when the process is first known to be Python (the walker checks
a process after its first samples). Whatever cannot be read keeps the comm.
Used only from the collector thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bpftop.bpf.raw import RawTick
from bpftop.symbols.python.runtime import PythonRuntime
from bpftop.symbols.python.threads import PythonThreadNames

PYTHON_READ_S = 1.0  # at most one read of a process's threading names per this


def _no_python(_pid: int) -> PythonRuntime | None:
    return None


class ThreadNames:
    """tid -> thread name for every sampled thread of every process.

    ``names`` gives the Python name or ``comm``, or ``NAME pid:tid`` where
    several sampled threads share a name (so they can be told apart in the
    Threads view); ``processes`` and ``threads`` count what was sampled (the
    -a summary). ``python_of`` gives a process's verified interpreter.
    """

    def __init__(
        self,
        proc_root: str = "/proc",
        python_of: Callable[[int], PythonRuntime | None] = _no_python,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._proc = proc_root
        self._python_of, self._clock = python_of, clock
        self._comm: dict[int, str] = {}
        self._tgid: dict[int, int] = {}
        self._python: dict[int, tuple[int, str]] = {}  # tid -> (tgid, threading's name)
        self._readers: dict[int, PythonThreadNames] = {}  # per tgid, its runtime's
        self._read_at: dict[int, float] = {}
        self._stale: set[int] = set()  # tgids with a thread not yet looked up
        self._labels: dict[int, str] = {}
        self._dirty = False

    @property
    def names(self) -> dict[int, str]:
        if self._dirty:
            self._labels = self._label()
            self._dirty = False
        return self._labels

    @property
    def threads(self) -> int:
        return len(self._tgid)

    @property
    def processes(self) -> int:
        return len(set(self._tgid.values()))

    def note(self, tick: RawTick) -> None:
        for tgid in tick.execs:  # a new image: its Python names (if any) are to be read again
            self._forget_python(tgid)
        for ev in tick.exits:  # the name at exit is the thread's last
            if ev.comm or ev.tid not in self._comm:
                self._set(ev.tid, ev.tgid, ev.comm)
        for sample in tick.samples:
            if sample.tid not in self._comm:
                self._set(sample.tid, sample.tgid, self._read(sample.tgid, sample.tid))
                self._stale.add(sample.tgid)
        for tgid in {s.tgid for s in tick.samples}:
            runtime = self._python_of(tgid)
            reader = self._readers.get(tgid)
            if runtime is not None and (reader is None or reader.runtime is not runtime):
                self._readers[tgid] = PythonThreadNames(runtime)
                self._read_at.pop(tgid, None)
                self._stale.add(tgid)
        self._read_python()

    def _read_python(self) -> None:
        """Read the Python names of the processes with new threads, rate-limited."""
        now = self._clock()
        for tgid in list(self._stale):
            reader = self._readers.get(tgid)
            if reader is None:
                self._stale.discard(tgid)  # not (yet) known to be Python: comm it is
                continue
            if now - self._read_at.get(tgid, -PYTHON_READ_S) < PYTHON_READ_S:
                continue  # read again at a later tick
            self._read_at[tgid] = now
            self._stale.discard(tgid)
            found = reader.read()
            if isinstance(found, dict):  # else: a reason; the comm stays
                for tid, name in found.items():
                    if self._python.get(tid) != (tgid, name):
                        self._python[tid] = (tgid, name)
                        self._dirty = True

    def _forget_python(self, tgid: int) -> None:
        self._readers.pop(tgid, None)
        self._read_at.pop(tgid, None)
        for tid in [tid for tid, (owner, _) in self._python.items() if owner == tgid]:
            del self._python[tid]
        self._dirty = True

    def _set(self, tid: int, tgid: int, comm: str) -> None:
        self._comm[tid] = comm
        self._tgid[tid] = tgid
        self._dirty = True

    def _read(self, tgid: int, tid: int) -> str:
        """The thread's comm (any process's: /proc/TGID/task/TID)."""
        try:
            path = f"{self._proc}/{tgid}/task/{tid}/comm"
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read().strip()
        except OSError:
            return ""

    def _name(self, tid: int) -> str:
        """Python's name for the thread if it has one (of the same process), else comm."""
        named = self._python.get(tid)
        return named[1] if named is not None and named[0] == self._tgid[tid] else self._comm[tid]

    def _label(self) -> dict[int, str]:
        names = {tid: self._name(tid) for tid in self._comm}
        seen: dict[str, int] = {}
        for name in names.values():
            seen[name] = seen.get(name, 0) + 1
        return {
            tid: name if seen[name] == 1 or not name else f"{name} {self._tgid[tid]}:{tid}"
            for tid, name in names.items()
        }
