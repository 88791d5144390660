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

Then it loads what bpftop loads only on a probe kind's first use
(bpf/program.py ``_attach``): the walker's copies for kprobe-type and
tracepoint-type handlers (bpf/probe_stacks.py) and the Python walker's copies
(bpf/python_walk.py), timing that as ``copies``. It writes one line of
``key=CLOCK_MONOTONIC seconds`` to the file named by ``READY_OUT`` and
interrupts itself (record then writes its file and exits as on Ctrl-C).

    .venv/bin/python -m bench.ready_driver record -p PID -d 60 -o out.folded
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

from bpftop.tui.cli.main import main

POLL_S = 0.005


def _collector() -> Any | None:
    for thread in threading.enumerate():
        if thread.name == "bpftop-collector":
            return getattr(getattr(thread, "_target", None), "__self__", None)
    return None


def _load_copies(collector: Any) -> None:
    """Every probe kind's walker copies, as the first switch to each kind would load them."""
    import bcc

    from bpftop.bpf.libbcc import LIBBCC_LOCK
    from bpftop.bpf.probe_stacks import load_probe_walker
    from bpftop.bpf.probes import ProbeKind

    sampler = collector._sampler
    with LIBBCC_LOCK:
        for kind in (ProbeKind.UPROBE, ProbeKind.TRACEPOINT):
            if sampler.unwinder is not None:
                load_probe_walker(sampler._bpf, bcc.BPF, kind)
            if sampler.python is not None:
                sampler.python.load_probe_copy(kind, bcc.BPF)


def _watch(out: str) -> None:
    times: dict[str, float] = {}
    while True:
        collector = _collector()
        if collector is not None:
            loading = collector._loading
            if "compiling" not in times and loading is not None:
                times["compiling"] = time.monotonic()
            if "compiled" not in times and loading is not None and loading.done.is_set():
                times["compiled"] = time.monotonic()
            if "attached" not in times and getattr(collector._sampler, "_attachment", None):
                times["attached"] = time.monotonic()
            feed = collector._unwind_feed
            if "tables" not in times and feed is not None and feed.ready.is_set():
                times["tables"] = time.monotonic()
            if {"attached", "tables"} <= times.keys() or collector.finished.is_set():
                break
        time.sleep(POLL_S)
    if {"attached", "tables"} <= times.keys():
        _load_copies(collector)
        times["copies"] = time.monotonic()
    with open(out, "w") as f:
        f.write(" ".join(f"{k}={v:.6f}" for k, v in times.items()) + "\n")
    os.kill(os.getpid(), signal.SIGINT)


if __name__ == "__main__":
    threading.Thread(target=_watch, args=(os.environ["READY_OUT"],), daemon=True).start()
    sys.exit(main())
