"""Which processes are busy on a CPU now (-a: the feed gives them tables first).

Owns :func:`busy_processes`: CPU time from /proc/PID/stat, compared over a
short window, so the processes about to be sampled are found before any
sample arrives.
"""

from __future__ import annotations

import os
import threading


def busy_processes(window_s: float, stop: threading.Event) -> list[tuple[int, int]]:
    """(pid, CPU ticks) of the processes that used CPU time in the next
    ``window_s``, most first (an empty list when ``stop`` is set meanwhile)."""
    before = _cpu_ticks()
    if stop.wait(window_s):
        return []
    after = _cpu_ticks()
    used = ((pid, ticks - before.get(pid, 0)) for pid, ticks in after.items())
    return sorted((u for u in used if u[1] > 0), key=lambda u: -u[1])


def _cpu_ticks() -> dict[int, int]:
    """utime + stime of every process (fields 14 and 15 of /proc/PID/stat)."""
    found: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stream:
                fields = stream.read().rpartition(")")[2].split()
            found[int(name)] = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return found
