"""What the live view and ``record`` share: up-front checks, the collector, clean ends.

Owns :func:`check` (validate the arguments, the probe included, before
anything is compiled or touches the kernel, and build the sampler),
:func:`make_collector` (for the chosen targets; ``-- COMMAND`` is started
held here) and :func:`end_launched` (a command bpftop started ends with
bpftop). How a run ends on a signal: :mod:`bpftop.tui.cli.shutdown`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

import psutil

from bpftop.bpf.environment import check_privileges, ensure_tracefs, import_bcc
from bpftop.bpf.errors import BccMissingError, NoSuchProcessError, UsageError
from bpftop.bpf.probes import ProbeKind, parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.program_text import PROGRAM_FILE
from bpftop.bpf.resolve import check_up_front
from bpftop.tui.cli.shutdown import end_command
from bpftop.tui.collect.collector import Collector
from bpftop.tui.collect.targets import is_stopped, launch_held

LAUNCHED_END_S = 1.0
"""How long a command bpftop started has to end on SIGTERM before SIGKILL."""


def check(args: argparse.Namespace) -> CpuSampler | None:
    """Validate what can be validated before anything touches the kernel."""
    if not 1 <= args.frequency <= 100_000:
        raise UsageError(f"frequency {args.frequency} Hz is out of range", "use 1..100000")
    spec = parse_spec(args.probe) if args.probe else None
    sampler = CpuSampler(
        args.frequency,
        probe=spec,
        system_wide=args.all,
        follow_children=args.children,
        gil_only=getattr(args, "gil", False),
        source=Path(os.environ.get("BPFTOP_BPF_SOURCE", PROGRAM_FILE)),
        unwind=args.unwind,
        copies_ahead=True,  # a first switch to another probe kind need not verify them
    )
    if args.print_bpf:
        print(sampler.program_text())
        return None
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    chosen = [bool(args.pids), args.all, bool(args.command)]
    if sum(chosen) != 1:
        raise UsageError(
            "give exactly one target: -p PID (repeatable), -a, or -- COMMAND",
            f"see '{sys.argv[0]} --help'",
        )
    for pid in args.pids or ():
        if pid <= 0 or not psutil.pid_exists(pid):
            raise NoSuchProcessError(f"no process with pid {pid}", "check the pid with ps or pgrep")
        if is_stopped(pid):  # e.g. left held by a bpftop killed with SIGKILL
            print(
                f"bpftop: process {pid} is stopped: it is sampled once continued"
                f" (kill -CONT {pid})",
                file=sys.stderr,
            )
    check_privileges()
    _bcc_or_perf_event(sampler, args)
    _check_probe(sampler, args)
    return sampler


def _bcc_or_perf_event(sampler: CpuSampler, args: argparse.Namespace) -> None:
    """BCC's bindings, or CPU sampling over perf_event alone: the compile's own
    import then fails the same way, and the collector samples on without BPF and
    says why (as when the verifier refuses the program). Other probes need BPF;
    --no-early (which --gil implies) asks for BPF's samples only."""
    try:
        import_bcc()
    except BccMissingError:
        if getattr(args, "no_early", False) or sampler.spec.kind is not ProbeKind.PROFILE:
            raise


def _check_probe(sampler: CpuSampler, args: argparse.Namespace) -> None:
    """A probe that cannot be attached fails now, not after the compile (the
    same error ``sampler.start()`` would raise; a library a command not yet
    started will map is looked up then)."""
    ensure_tracefs()
    pids = None if args.command else (args.pids or ())
    check_up_front(sampler.spec, pids, sampler.any_process)


def make_collector(args: argparse.Namespace, sampler: CpuSampler, interval_s: float) -> Collector:
    """The collector for the chosen targets; -- COMMAND is started held here."""
    launched = launch_held(args.command) if args.command else None
    pids = [launched.pid] if launched is not None else (args.pids or [0])
    args.launched = launched
    try:
        return Collector(
            pids[0],
            sampler,
            interval_s,
            offsets=args.offsets,
            mangled=args.mangled,
            short_names=getattr(args, "names", "full") == "short",
            extra_pids=pids[1:],
            system_wide=args.all,
            launched=launched,
            early=getattr(args, "early_perf", None),
            early_sampling=not getattr(args, "no_early", False),
            python_frames=not getattr(args, "no_python", False),
        )
    except BaseException:
        end_launched(args)
        raise


def end_launched(args: argparse.Namespace) -> None:
    """A command bpftop started ends with bpftop (SIGTERM; held ones are continued;
    SIGKILL for one still there a second later)."""
    end_command(getattr(args, "launched", None), wait_s=LAUNCHED_END_S)


def keep_stderr() -> None:
    """Python's stderr writes go to a duplicate of fd 2: a compile still running
    in the background (it redirects fd 2 to capture BCC's log) cannot swallow
    what bpftop says at the end."""
    with contextlib.suppress(OSError):
        sys.stderr.flush()
        sys.stderr = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
