"""Start-up work yields the CPU to the target: :func:`lower_priority` for the calling thread.

On a 2-core machine BCC's compile (seconds of CPU), the unwind-table builders
and the target all want a core in the first seconds of a run, while the early
perf_event sampler must keep draining its rings. A short-lived ``-p`` target
(it spins until 1.5 s after bpftop's launch, then exits, long before the
compile ends) got less CPU under bpftop than under ``perf record``, so fewer
samples: a median 0.40-0.48 of perf's (``bench.startup --only short``, runs
back to back, a VM kept busy by other jobs, load 3-4). With the compile thread
and the table builders at nice +10: 0.54-0.60 (6 runs); with the pid check also
off the early sampler's path (tui/cli/pid_checks.py): 0.70 (9 runs). The
threads that drain and count (collector, rings) keep their priority, and the
compile still gets whatever CPU is idle; once someone waits for it (no early
sampler, or a record ending) it gets its priority back with
:class:`Yielding` (BackgroundLoad; the unwind feed's builder once BPF is
attached, when no early sampler runs, or when a command held at its exec waits
for its tables: a -a --no-early record had 98.4% of its stacks reach main
instead of >= 99% with the builder lowered to the end). Linux keeps a nice value per
thread (setpriority(2) on a tid), and threads a thread starts inherit it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from types import TracebackType

BACKGROUND_NICE = 10
"""How much lower than the process the background threads run (19 at most)."""
YIELD_S = 2.0
"""How long at most they run lowered: the start-up it protects (a target that
exits 1.5 s after bpftop's launch) is over by then. Lowered to the end, on a
VM at load 3-5, BPF was attached 25 s after launch instead of 7-10 s
(bench.ready, the compile lowered while the early sampler runs)."""


def lower_priority(by: int = BACKGROUND_NICE) -> int | None:
    """Lower the calling thread's priority by ``by`` nice steps (capped at 19):
    its new nice value, or None if the kernel refused (the thread runs on)."""
    tid = threading.get_native_id()
    try:
        nice = min(19, os.getpriority(os.PRIO_PROCESS, tid) + by)
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError:
        return None
    return nice


def restore_priority(tid: int) -> None:
    """Give thread ``tid`` of this process the main thread's nice value again
    (lowering a nice value needs CAP_SYS_NICE: root has it); nothing if refused."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, os.getpid()))


class Yielding:
    """One background thread's priority: lowered while it runs (``with`` on
    that thread), unless someone already waits for it; restored for good once
    someone does (:meth:`hurry`, from any thread) or ``at_most_s`` after the
    ``with`` began. Its thread id is forgotten when the ``with`` ends, so a
    recycled id is never touched."""

    def __init__(self, at_most_s: float = YIELD_S) -> None:
        self._lock = threading.Lock()
        self._tid: int | None = None
        self._hurried = False
        self._timer = threading.Timer(at_most_s, self.hurry)
        self._timer.daemon = True

    def __enter__(self) -> Yielding:
        with self._lock:
            self._tid = threading.get_native_id()
            if not self._hurried:
                lower_priority()
                self._timer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._timer.cancel()
        with self._lock:
            self._tid = None

    def hurry(self) -> None:
        """Someone waits for the thread: its priority is the process's from now on."""
        with self._lock:
            if not self._hurried and self._tid is not None:
                restore_priority(self._tid)
            self._hurried = True
