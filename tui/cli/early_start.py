"""The first samples, before the heavy imports: open perf_event sampling from the arguments.

Owns :func:`open_early`: right after the options are parsed (before the
collector, the model and numpy are imported, and long before BCC compiles),
CPU sampling of ``-p`` targets or ``-a`` starts over perf_event_open(2).
The collector takes the running sampler over (:class:`EarlyFeed`). Anything
unusual (not root, another probe, a command to launch, a bad value) opens
nothing here: the normal checks then say what is wrong.
"""

from __future__ import annotations

import os

from bpftop.base.errors import BpftopError
from bpftop.bpf.perf_events import PerfSampler
from bpftop.bpf.probes import parse_spec
from bpftop.tui.collect.options import Options


def open_early(options: Options) -> PerfSampler | None:
    """A running perf_event sampler for the live view's or ``record``'s options, or None."""
    if os.geteuid() != 0 or options.print_bpf or options.command or not options.early:
        return None
    if not 1 <= options.frequency <= 100_000 or not (options.pids or options.all_processes):
        return None
    try:
        if options.probe and not parse_spec(options.probe).is_profile:
            return None
    except BpftopError:
        return None
    perf = PerfSampler(options.frequency, targets=options.pids, all_processes=options.all_processes)
    try:
        perf.open()
        perf.enable()
        perf.keep_rings_empty()  # the imports that follow take seconds on a busy machine
    except BpftopError:
        perf.close()
        return None  # the collector tries again and says why
    return perf
