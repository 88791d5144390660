"""Why a ``record`` holds no samples: one warning line with a hint.

Owns :func:`empty_reason`. A record with no samples is still written (as
``perf record`` writes its file and reports 0 samples) and exits 0: an idle
process sampled for its CPU time honestly has none. What a user cannot tell
from "wrote 0 samples" alone is why, so the line names the case:

- the target exited before sampling started (without the early perf_event
  sampler, sampling starts once BPF is compiled), or exited having used no
  CPU while sampled (a short-lived ``-p`` target: start it under bpftop
  instead, ``record -- COMMAND``);
- the target lived but used no CPU while sampled (CPU samples land only on
  a running thread: ``--probe offcpu`` shows where it waits);
- an event probe never fired in the targets while they were recorded.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from bpftop.bpf.probes import Attach, parse_spec


@dataclass(frozen=True)
class EmptyRun:
    """What a record that got no samples knows about its run."""

    probe: str  # the probe spec recorded (its text)
    targets: str  # "process 123 (name)", "the command", "every process"
    exited: bool  # the targets were gone at the end
    early: bool  # perf_event sampling ran from before the pid was checked
    after_s: float  # from bpftop's launch to when their exit was seen, or the end
    launched: bool  # -- COMMAND: bpftop started the target itself


def empty_reason(run: EmptyRun) -> str:
    """The warning line (no "bpftop: " prefix) for a record with no samples."""
    cpu = parse_spec(run.probe).rule.attach is Attach.PERF_EVENT
    when = f"within {run.after_s:.1f} s of bpftop's launch"
    if run.exited and not run.launched:
        if not cpu:
            why = f"and {run.probe} never fired in it"
        elif run.early:
            why = "with no sample landed in it: it used (almost) no CPU while sampled"
        else:  # no perf_event sampling before BPF (--no-early, or it could not open)
            why = "before sampling started (once BPF was compiled) or using no CPU since"
        return (
            f"no samples: {run.targets} exited {when} {why} (to catch a short-lived "
            "process from its first instruction, start it under bpftop: "
            "bpftop record -- COMMAND)"
        )
    if cpu:
        return (
            f"no samples: no {run.probe} sample landed in {run.targets} {when}: it used "
            "(almost) no CPU while sampled (samples land only on a running thread; "
            "--probe offcpu shows where it waits)"
        )
    return (
        f"no samples: {run.probe} never fired in {run.targets} {when} (check that "
        "the code or event it names runs while recording; -d records longer)"
    )


def seconds_since_launch() -> float:
    """How long this process has run (CLOCK_BOOTTIME against its start time in
    /proc/self/stat, clock-tick resolution); 0.0 if that cannot be read."""
    try:
        fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
        started_s = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0
    return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started_s)
