"""The walkers' copies for probe handlers: loaded on a probe kind's first use,
or verified ahead on a thread.

A tail call stays within its program type, so the .eh_frame walker
(bpf/probe_stacks.py) and the Python walker (bpf/python_walk.py) have a copy
for kprobe-type handlers and one for tracepoint-type handlers, loaded apart
from the main program. Owns :class:`ProbeCopies`: :meth:`~ProbeCopies.ensure`
loads the copies one program type's handlers tail-call (a switch's
``_attach``), :meth:`~ProbeCopies.preload` loads all of them on a thread of
its own (``CpuSampler(copies_ahead=True)``, as the CLI makes it: from the end
of the compile, beside the handlers' verification; the verifier runs in the
kernel and BCC's ctypes calls release the GIL), and :meth:`~ProbeCopies.stop`
ends that thread before the program is freed. One lock around each load: a
copy is loaded once, and a switch that comes while the thread verifies waits
for that copy at most.

Measured (bench.ready, 3 runs each, 2 rounds): the four copies take 0.17 s of
one core's verifier time after the attach when loaded at first use; ahead,
they are verified by the time the probe is attached (cold launch -> all
copies 3.78-3.85 -> 3.61-3.73 s, ready unchanged within the runs' spread),
and every run pays their CPU, switch or not.
"""

from __future__ import annotations

import threading
from typing import Any

from bpftop.bpf.probe_stacks import load_probe_walker
from bpftop.bpf.probes import ProgramType
from bpftop.bpf.python_walk import load_probe_copy

AHEAD = (ProgramType.KPROBE, ProgramType.TRACEPOINT)
"""The program types that have copies: kprobe-type, tracepoint-type."""


class ProbeCopies:
    """The copies of one compiled program (``walker``, ``python``: it has the
    .eh_frame walker, the Python walker). Thread-safe."""

    def __init__(
        self, bpf: Any, program_types: Any, walker: bool, python: bool, ahead: bool = False
    ) -> None:
        """``program_types``: ``bcc.BPF``, whose attributes name the types;
        ``ahead``: :meth:`preload` now."""
        self._bpf, self._types = bpf, program_types
        self._walker, self._python = walker, python
        self._lock = threading.Lock()
        self._stopped = False
        self._thread: threading.Thread | None = None
        if ahead:
            self.preload()

    def ensure(self, program: ProgramType, python: bool = True) -> None:
        """Load the copies that handlers of ``program`` type tail-call (the
        Python walker's only when ``python``: a probe kind's
        ``KindRule.python``), unless they are loaded; one the kernel refuses
        does not keep the other from loading (then raises what BCC raised for
        the first refused)."""
        with self._lock:
            if self._stopped:
                return
            refused: Exception | None = None
            loads = [load_probe_walker] if self._walker else []
            loads += [load_probe_copy] if self._python and python else []
            for load in loads:
                try:
                    load(self._bpf, self._types, program)
                except Exception as exc:
                    refused = refused or exc
            if refused is not None:
                raise refused

    def preload(self) -> None:
        """Start verifying every copy on a thread (once; nothing to wait for:
        :meth:`ensure` takes what is loaded and loads the rest)."""
        if self._thread is None and (self._walker or self._python):
            self._thread = threading.Thread(target=self._ahead, name="bpftop-copies", daemon=True)
            self._thread.start()

    def _ahead(self) -> None:
        for program in AHEAD:
            try:
                self.ensure(program)
            except Exception:  # the type's first probe loads it again and says why
                continue

    def stop(self) -> None:
        """No copy is loaded from now on; waits for the one being verified."""
        with self._lock:
            self._stopped = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
