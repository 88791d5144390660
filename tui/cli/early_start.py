"""The first samples, before the heavy imports: open perf_event sampling from the arguments.

Owns :func:`open_early`: right after the arguments are parsed (before the
collector, the model and numpy are imported, and long before BCC compiles),
CPU sampling of ``-p`` targets or ``-a`` starts over perf_event_open(2).
The collector takes the running sampler over (:class:`EarlyFeed`). Anything
unusual (not root, another probe, a command to launch, a bad value) opens
nothing here: the normal checks then say what is wrong.
"""

from __future__ import annotations

import argparse
import os

from bpftop.bpf.errors import BpftopError
from bpftop.bpf.perf_events import PerfSampler
from bpftop.bpf.probes import ProbeKind, parse_spec


def open_early(args: argparse.Namespace) -> PerfSampler | None:
    """A running perf_event sampler for the parsed ``record``/live arguments, or None."""
    if os.geteuid() != 0 or getattr(args, "print_bpf", False) or getattr(args, "command", None):
        return None
    if getattr(args, "no_early", False):
        return None
    if not 1 <= args.frequency <= 100_000 or not (args.pids or args.all):
        return None
    try:
        if args.probe and parse_spec(args.probe).kind is not ProbeKind.PROFILE:
            return None
    except BpftopError:
        return None
    perf = PerfSampler(args.frequency, targets=args.pids or (), all_processes=args.all)
    try:
        perf.open()
        perf.enable()
        perf.keep_rings_empty()  # the imports that follow take seconds on a busy machine
    except BpftopError:
        perf.close()
        return None  # the collector tries again and says why
    return perf
