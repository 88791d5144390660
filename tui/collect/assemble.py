"""The sampler and the collector for one run's options: the one place options become them.

Owns :func:`make_sampler` (the BPF program's options for the probe and targets)
and :func:`make_collector` (``-- COMMAND`` is started held here, and ended
again if the collector cannot be made), and :func:`end_launched` (a command
bpftop started ends with bpftop).
"""

from __future__ import annotations

import os
from pathlib import Path

from bpftop.bpf.perf_events import PerfSampler
from bpftop.bpf.probes import parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.program_text import PROGRAM_FILE
from bpftop.tui.collect.collector import Collector
from bpftop.tui.collect.options import Options
from bpftop.tui.collect.targets import end_command, launch_held

LAUNCHED_END_S = 1.0
"""How long a command bpftop started has to end on SIGTERM before SIGKILL."""


def make_sampler(options: Options) -> CpuSampler:
    """The BPF sampler for ``options``' probe and targets (nothing loaded yet).
    ``BPFTOP_BPF_SOURCE`` names another program file (the tests' broken one)."""
    return CpuSampler(
        options.frequency,
        probe=parse_spec(options.probe) if options.probe else None,
        system_wide=options.all_processes,
        follow_children=options.children,
        gil_only=options.gil,
        source=Path(os.environ.get("BPFTOP_BPF_SOURCE", PROGRAM_FILE)),
        unwind=options.unwind,
        copies_ahead=True,  # a first switch to another probe kind need not verify them
    )


def make_collector(options: Options, sampler: CpuSampler, early: PerfSampler | None) -> Collector:
    """The collector for ``options``' targets over ``sampler``, taking over
    ``early`` (perf_event sampling started before the imports) if any."""
    launched = launch_held(options.command) if options.command else None
    pids = [launched.pid] if launched is not None else list(options.pids) or [0]
    try:
        return Collector(
            pids[0],
            sampler,
            options.interval_s,
            offsets=options.offsets,
            mangled=options.mangled,
            short_names=options.short_names,
            extra_pids=pids[1:],
            system_wide=options.all_processes,
            launched=launched,
            early=early,
            early_sampling=options.early,
            python_frames=options.python_frames,
        )
    except BaseException:
        end_command(launched, wait_s=LAUNCHED_END_S)
        raise


def end_launched(collector: Collector) -> None:
    """A command bpftop started ends with bpftop (SIGTERM; held ones are continued;
    SIGKILL for one still there a second later)."""
    end_command(collector.launched, wait_s=LAUNCHED_END_S)
