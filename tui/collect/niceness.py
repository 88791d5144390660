"""Start-up work yields the CPU to the target: :func:`lower_priority` for the calling thread.

On a 2-core machine BCC's compile (seconds of CPU), the unwind-table builders
and the target all want a core in the first seconds of a run, while the early
perf_event sampler must keep draining its rings. A short-lived ``-p`` target
(it burns ~1.5 s of CPU and exits while bpftop still compiles) then got ~0.55
of ``perf record``'s samples of the same run (``bench.startup --only short``,
median of 5 on a busy VM): the target itself got less CPU. With the compile
thread and the table builders at nice +10 the target keeps its core, and the
threads that only drain and count (collector, rings) keep theirs; the compile
still has whatever CPU is idle. Linux keeps a nice value per thread
(setpriority(2) on a tid), and threads a thread starts inherit it.
"""

from __future__ import annotations

import os
import threading

BACKGROUND_NICE = 10
"""How much lower than the process the background threads run (19 at most)."""


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
