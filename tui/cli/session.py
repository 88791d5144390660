"""What the live view and ``record`` share: up-front checks and a clean stderr.

Owns :func:`check` (validate the options, the probe included, before anything
is compiled or touches the kernel, and make the sampler). The collector is
made from the options in :mod:`bpftop.tui.collect.assemble`; how a run ends
on a signal: :mod:`bpftop.tui.cli.shutdown`.
"""

from __future__ import annotations

import contextlib
import os
import sys

import psutil

from bpftop.base.errors import BccMissingError, NoSuchProcessError, UsageError
from bpftop.bpf.environment import check_privileges, ensure_tracefs, import_bcc
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.resolve import check_up_front
from bpftop.tui.collect.assemble import make_sampler
from bpftop.tui.collect.options import Options
from bpftop.tui.collect.targets import is_stopped


def check(options: Options) -> CpuSampler | None:
    """Validate what can be validated before anything touches the kernel; the
    sampler, or None when there is nothing to run (``--print-bpf`` printed)."""
    if not 1 <= options.frequency <= 100_000:
        raise UsageError(f"frequency {options.frequency} Hz is out of range", "use 1..100000")
    sampler = make_sampler(options)
    if options.print_bpf:
        print(sampler.program_text())
        return None
    chosen = [bool(options.pids), options.all_processes, bool(options.command)]
    if sum(chosen) != 1:
        raise UsageError(
            "give exactly one target: -p PID (repeatable), -a, or -- COMMAND",
            f"see '{sys.argv[0]} --help'",
        )
    for pid in options.pids:
        if pid <= 0 or not psutil.pid_exists(pid):
            raise NoSuchProcessError(f"no process with pid {pid}", "check the pid with ps or pgrep")
        if is_stopped(pid):  # e.g. left held by a bpftop killed with SIGKILL
            print(
                f"bpftop: process {pid} is stopped: it is sampled once continued"
                f" (kill -CONT {pid})",
                file=sys.stderr,
            )
    check_privileges()
    _bcc_or_perf_event(sampler, options)
    _check_probe(sampler, options)
    return sampler


def _bcc_or_perf_event(sampler: CpuSampler, options: Options) -> None:
    """BCC's bindings, or CPU sampling over perf_event alone: the compile's own
    import then fails the same way, and the collector samples on without BPF and
    says why (as when the verifier refuses the program). Other probes need BPF;
    --no-early (which --gil implies) asks for BPF's samples only."""
    try:
        import_bcc()
    except BccMissingError:
        if not options.early or not sampler.spec.is_profile:
            raise


def _check_probe(sampler: CpuSampler, options: Options) -> None:
    """A probe that cannot be attached fails now, not after the compile (the
    same error ``sampler.start()`` would raise; a library a command not yet
    started will map is looked up then)."""
    ensure_tracefs()
    check_up_front(sampler.spec, None if options.command else options.pids, sampler.any_process)


def keep_stderr() -> None:
    """Python's stderr writes go to a duplicate of fd 2: a compile still running
    in the background (it redirects fd 2 to capture BCC's log) cannot swallow
    what bpftop says at the end."""
    with contextlib.suppress(OSError):
        sys.stderr.flush()
        sys.stderr = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
