"""Waiting until every BPF handler that may still write the old generation has returned.

Owns :func:`wait_for_handlers`. After user space flips the generation, a
handler that read the old one just before may still be adding to the old
generation's maps; draining them before it returns would lose its count (or
leave it behind in a map already drained, lost at the last drain). A fixed
sleep only makes that unlikely (a vCPU the host stops mid-handler stays
stopped for milliseconds). ``membarrier(MEMBARRIER_CMD_GLOBAL)`` is
``synchronize_rcu()`` in the kernel, and every tracing BPF program runs in an
RCU read-side section (uprobes, kprobes and tracepoints under
``rcu_read_lock`` with preemption off, perf-event handlers in interrupt
context): when it returns, every handler that started before has finished.
Where membarrier cannot be used (a nohz_full kernel, no syscall), a short
sleep stands in, as before.
"""

from __future__ import annotations

import ctypes as ct
import platform
import time

_SYS_MEMBARRIER = {"x86_64": 324, "aarch64": 283}.get(platform.machine())
MEMBARRIER_CMD_GLOBAL = 1  # linux/membarrier.h (formerly MEMBARRIER_CMD_SHARED)
FALLBACK_SLEEP_S = 0.001

_libc = ct.CDLL(None, use_errno=True)
_libc.syscall.restype = ct.c_long
_usable = True


def wait_for_handlers() -> bool:
    """Return once every BPF handler running when called has returned; False
    when that could only be approximated by a sleep."""
    global _usable
    if _usable and _SYS_MEMBARRIER is not None:
        res = _libc.syscall(ct.c_long(_SYS_MEMBARRIER), ct.c_int(MEMBARRIER_CMD_GLOBAL), 0, 0)
        if res == 0:
            return True
        _usable = False  # EINVAL (nohz_full) or ENOSYS: it will not work later either
    time.sleep(FALLBACK_SLEEP_S)
    return False
