"""The ``-p`` check that comes before the first sample: no kernel threads.

Owns :func:`refuse_kernel_threads`. It runs between parsing and
:func:`~bpftop.tui.cli.early_start.open_early`, so this module imports
nothing heavy: when the check lived in :mod:`bpftop.tui.collect.targets`,
importing that (the symbolizer, the model, numpy) put ~0.18 s before
perf_event sampling started (``python -X importtime``, 2-core VM).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bpftop.base.errors import UsageError

PF_KTHREAD = 0x00200000
"""The task flag (field 9 of /proc/PID/stat) of a kernel thread."""


def is_kernel_thread(pid: int) -> bool:
    """Is ``pid`` a kernel thread (no user space to sample)? False if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rpartition(")")[2].split()
    try:
        return bool(int(fields[6]) & PF_KTHREAD)
    except (IndexError, ValueError):
        return False


def refuse_kernel_threads(pids: Sequence[int]) -> None:
    """Raise UsageError for a kernel thread among ``pids``: it has no user stacks
    and bpftop samples only the targets' own processes."""
    for pid in pids:
        if is_kernel_thread(pid):
            raise UsageError(
                f"pid {pid} is a kernel thread: bpftop profiles user processes",
                "for kernel stacks of every process use -a",
            )
