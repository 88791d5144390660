"""``bpftop`` with a watcher that says when everything is ready (for bench.ready).

Runs exactly what the ``bpftop`` console script runs (``main()`` of
bpftop.tui.cli.main, same imports in the same order) plus one thread that
finds the collector (the target of the thread named ``bpftop-collector``) and
polls, every ``POLL_S``, for:

  attached   the BPF program is loaded and the probe attached (every probe
             kind's handlers are verified in that one load, bpf/program.py)
  tables     the .eh_frame walker has every table of every target's maps
             (``UnwindFeed.ready``: each target current in the walker)
  compiling, compiled   BCC's compile (and load) started, returned

Then it has what a first switch to each other probe kind needs
(bpf/program.py ``_attach``): the walker's copies for kprobe-type and
tracepoint-type handlers (bpf/probe_stacks.py) and the Python walker's copies
(bpf/python_walk.py), which bpftop verifies on a thread from the compile on
(bpf/probe_copies.py): waiting for those being verified, loading any not
begun, timing that as ``copies``. It writes one line of
``key=CLOCK_MONOTONIC seconds`` to the file named by ``READY_OUT``, with
``cpu_key=CPU seconds`` beside each (see :func:`own_cpu_s`), and interrupts
itself (record then writes its file and exits as on Ctrl-C).

CPU at a milestone is the process's user + system time since its exec (every
thread, dead ones too, and reaped children: ``os.times()``; live children's
from /proc), less what this watcher's polling cost (its own thread's CPU,
``watch`` below: bpftop does not poll). A copy loaded on the watcher's
thread counts, as it would on the collector's. Clock-tick (10 ms) resolution.

    .venv/bin/python -m bench.ready_driver record -p PID -d 60 -o out.folded
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bpftop.tui.cli.main import main

POLL_S = 0.005


def own_cpu_s() -> float:
    """User + system CPU of this process (all threads) and its children, reaped or live."""
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    for pid in _live_children():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone since: its time is in children_* once reaped
        total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def _live_children() -> list[int]:
    pids = []
    for task in Path("/proc/self/task").iterdir():
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return pids


def _collector() -> Any | None:
    for thread in threading.enumerate():
        if thread.name == "bpftop-collector":
            return getattr(getattr(thread, "_target", None), "__self__", None)
    return None


def _load_copies(collector: Any) -> None:
    """Every probe kind's walker copies, as the first switch to each kind has
    them (``CpuSampler._attach``: waits for the ones being verified, loads the rest)."""
    from bpftop.bpf.probe_copies import AHEAD

    copies = collector._sampler._copies
    for program in AHEAD if copies is not None else ():
        copies.ensure(program)


def _watch(out: str) -> None:
    times: dict[str, float] = {}

    def reached(key: str) -> None:
        times[key] = time.monotonic()
        times[f"cpu_{key}"] = own_cpu_s() - time.thread_time()  # less the polling

    while True:
        collector = _collector()
        if collector is not None:
            loading = collector._loading
            if "compiling" not in times and loading is not None:
                reached("compiling")
            if "compiled" not in times and loading is not None and loading.done.is_set():
                reached("compiled")
            if "attached" not in times and getattr(collector._sampler, "_attachment", None):
                reached("attached")
            feed = collector._unwind_feed
            if "tables" not in times and feed is not None and feed.ready.is_set():
                reached("tables")
            if {"attached", "tables"} <= times.keys() or collector.finished.is_set():
                break
        time.sleep(POLL_S)
    if {"attached", "tables"} <= times.keys():
        polled = time.thread_time()
        _load_copies(collector)
        times["copies"] = time.monotonic()
        times["cpu_copies"] = own_cpu_s() - polled  # the copies' CPU counts
    with open(out, "w") as f:
        f.write(" ".join(f"{k}={v:.6f}" for k, v in times.items()) + "\n")
    os.kill(os.getpid(), signal.SIGINT)


if __name__ == "__main__":
    threading.Thread(target=_watch, args=(os.environ["READY_OUT"],), daemon=True).start()
    sys.exit(main())
