"""Python processes among the sampled ones, for the in-kernel Python frame walker.

Owns :class:`PythonFeed`: on the collector thread, it checks each sampled
process once (and again after an exec) for a CPython interpreter
(:func:`~bpftop.symbols.python.runtime.find_python`), describes a verified
one to the loaded program's walker (``bpf/python_walk.py``), and keeps one
line per refused interpreter (``notes``: a Python whose layout bpftop cannot
verify; its native stacks go on), and merges the Python frames of their
samples into the native ones (:mod:`bpftop.tui.collect.python_frames`). A
process found without an interpreter is looked at again after
``RECHECK_S`` (libpython may be loaded later).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from bpftop.bpf.python_walk import PythonWalker
from bpftop.bpf.raw import RawSample, RawTick
from bpftop.symbols.frame import Frame
from bpftop.symbols.python.runtime import PythonRefused, PythonRuntime, find_python, refusal
from bpftop.tui.collect.python_frames import PythonFrames
from bpftop.tui.collect.python_procs import walker_process

RECHECK_S = 5.0  # a process without an interpreter is checked again after this


class PythonFeed:
    """Which sampled processes are Python, told to the kernel walker."""

    def __init__(self, recheck_s: float = RECHECK_S, *, enabled: bool = True) -> None:
        """``enabled`` False: no process is ever described to the walker (--no-python)."""
        self._enabled = enabled
        self._walker: PythonWalker | None = None
        self._found: dict[int, PythonRuntime | PythonRefused] = {}
        self._checked_at: dict[int, float] = {}  # pids without an interpreter
        self._recheck_s = recheck_s
        self._frames = PythonFrames()
        self.notes: list[str] = []  # one line per refused interpreter, in order

    def attach(self, sampler: Any, pids: Iterable[int]) -> None:
        """The program is loaded: use its walker (if it has one) for ``pids`` and
        every process sampled from now on."""
        walker = getattr(sampler, "python", None)
        usable = self._enabled and isinstance(walker, PythonWalker) and walker.usable
        self._walker = walker if usable else None
        for pid in pids:
            self.check(pid)

    def runtime(self, pid: int) -> PythonRuntime | None:
        """The verified interpreter of ``pid``, if it has one."""
        found = self._found.get(pid)
        return found if isinstance(found, PythonRuntime) else None

    def merged(self, sample: RawSample, native: tuple[Frame, ...]) -> tuple[Frame, ...]:
        """``native`` (innermost first) with ``sample``'s Python frames merged in."""
        runtime = self.runtime(sample.tgid)
        if runtime is None or not sample.python_stack:
            return native
        return self._frames.merged(runtime, sample, native)

    def note(self, tick: RawTick) -> None:
        """Check the processes this tick sampled that were not checked yet."""
        if self._walker is None:
            return
        now = time.monotonic()
        for tgid in {s.tgid for s in tick.samples}:
            if tgid in self._found:
                continue
            checked = self._checked_at.get(tgid)
            if checked is None or now - checked >= self._recheck_s:
                self.check(tgid)

    def retire(self, tick: RawTick) -> None:
        """Forget the processes that exited in this tick, once its samples are
        merged (the last second of a process that exits keeps its Python frames)."""
        for ended in tick.exits:
            if ended.tid == ended.tgid:  # the process is gone (its pid may come back)
                self.forget(ended.tgid)

    def forget(self, pid: int) -> None:
        """``pid`` exec'd (or exited): what was found no longer holds."""
        self._found.pop(pid, None)
        self._checked_at.pop(pid, None)
        self._frames.forget(pid)
        if self._walker is not None:
            self._walker.forget(pid)

    def exec(self, pid: int) -> None:
        """``pid`` exec'd: check its new image now."""
        self.forget(pid)
        self.check(pid)

    def refresh(self, pid: int) -> bool:
        """Look for ``pid``'s interpreter again and describe it anew, without
        forgetting it first (its samples keep their Python frames meanwhile):
        read at a held exec, before the loader ran, its thread state's place
        may not have been known yet. False when worth doing again later: no
        interpreter found, or one that has not made its thread-state key yet
        (3.13+ before it started: a blocked thread's frames need the key)."""
        if self._walker is None or pid <= 0:
            return True
        found = find_python(pid)
        process = walker_process(found) if isinstance(found, PythonRuntime) else None
        if (
            isinstance(found, PythonRuntime)
            and process is not None
            and not isinstance(process, str)
        ):
            self._found[pid] = found
            self._checked_at.pop(pid, None)
            self._walker.describe(pid, process)
            return bool(found.tss_key)
        return False

    def check_early(self, pids: Iterable[int]) -> None:
        """Before BPF loads: find ``pids``' interpreters now, so that one bpftop
        cannot verify is said at once (a 1 s record may end before the compile
        does, and with it the walker's ``attach``)."""
        for pid in pids:
            if self._enabled and pid > 0 and pid not in self._found:
                self._find(pid)

    def verified(self, pid: int) -> bool:
        """Whether ``pid`` runs an interpreter the walker will give Python frames
        (looked for once, before BPF loads too; never with --no-python)."""
        if not self._enabled or pid <= 0:
            return False
        if pid not in self._found and pid not in self._checked_at:
            self._find(pid)
        return self.runtime(pid) is not None

    def check(self, pid: int) -> None:
        if self._walker is None or pid <= 0:
            return
        found = self._found[pid] if pid in self._found else self._find(pid)
        if isinstance(found, PythonRuntime):
            process = walker_process(found)
            if not isinstance(process, str):
                self._walker.describe(pid, process)

    def _find(self, pid: int) -> PythonRuntime | PythonRefused | None:
        found = find_python(pid)
        if isinstance(found, PythonRuntime):
            unfit = walker_process(found)
            if isinstance(unfit, str):
                found = refusal(found, unfit)
        if found is None:
            self._checked_at[pid] = time.monotonic()
            return None
        self._found[pid] = found
        if isinstance(found, PythonRefused):
            self.notes.append(found.message)
        return found
