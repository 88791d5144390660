"""The ``bpftop`` command: argument parsing, up-front checks, and the two modes.

``bpftop -p PID`` opens the live view; ``bpftop record -p PID -o FILE`` samples
without a screen and writes folded stacks. Every error a user must fix is a
:class:`BpftopError`, printed as one line on stderr with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

import psutil

from bpftop.bpf.environment import check_privileges, import_bcc
from bpftop.bpf.errors import BpftopError, NoSuchProcessError, OutputError, UsageError
from bpftop.bpf.probes import parse_spec
from bpftop.bpf.program import PROGRAM_FILE, CpuSampler
from bpftop.tui.cli.gc_tuning import tune_gc
from bpftop.tui.collect.collector import Collector
from bpftop.tui.collect.targets import launch_held
from bpftop.tui.formats.kinds import FORMATS
from bpftop.tui.formats.saved import snapshot_meta
from bpftop.tui.model.snapshot import Phase, Snapshot

VERSION = "0.1.0"


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message, f"see '{self.prog} --help'")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-p",
        "--pid",
        type=int,
        action="append",
        dest="pids",
        help="process to profile (repeatable)",
    )
    p.add_argument("-a", "--all", action="store_true", help="profile every process")
    p.add_argument("--children", action="store_true", help="follow the processes the targets fork")
    p.add_argument(
        "-F",
        "--frequency",
        type=int,
        default=99,
        metavar="HZ",
        help="samples per second per CPU (default 99)",
    )
    p.add_argument(
        "--probe",
        metavar="SPEC",
        help="what to count (default profile:hz:HZ): software:page-faults, uprobe:c:malloc, "
        "uretprobe:BIN:FUNC (latency), tracepoint:CAT:NAME, offcpu[:MIN_US], kprobe:FUNC, "
        "hardware:cycles, usdt:BIN:PROVIDER:NAME",
    )
    p.add_argument(
        "--offsets",
        action="store_true",
        help="name frames function+0xOFFSET (user and kernel), one entry per address",
    )
    p.add_argument(
        "--mangled",
        action="store_true",
        help="keep C++/Rust names as the symbol table spells them (for export)",
    )
    p.add_argument(
        "--unwind",
        choices=("auto", "dwarf", "fp"),
        default="auto",
        help="user stacks: .eh_frame tables where they exist, else frame pointers (auto, "
        "the default); tables only (dwarf); frame pointers only (fp)",
    )
    p.add_argument("--print-bpf", action="store_true", help="print the BPF program and exit")
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="-- COMMAND ARGS...: start COMMAND held, attach, then let it run",
    )


def build_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    live = _Parser(
        prog="bpftop",
        description="Live eBPF stack profiler for one process.",
        epilog="Headless mode: bpftop record -p PID -d SECONDS -o FILE; saved profiles: "
        "bpftop view FILE, bpftop diff BASE NEW",
    )
    _common(live)
    live.add_argument(
        "-i",
        "--interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="refresh interval (default 1)",
    )
    live.add_argument("--version", action="version", version=f"bpftop {VERSION}")
    record = _Parser(
        prog="bpftop record",
        description="Sample without a screen; write folded stacks, speedscope JSON, "
        "pprof or an SVG flame graph.",
    )
    _common(record)
    record.add_argument(
        "-d",
        "--duration",
        type=float,
        metavar="SECONDS",
        help="how long to record (default: until Ctrl-C or the process exits)",
    )
    record.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="FILE",
        help="where to write the profile (format by extension, or --format)",
    )
    record.add_argument(
        "--format",
        choices=FORMATS,
        help="output format (default: from the file name: .folded/.txt, .speedscope.json, "
        ".pb.gz, .svg; else folded)",
    )
    return live, record


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["record"]:
            return _record(build_parsers()[1].parse_args(args[1:]))
        if args[:1] in (["view"], ["diff"]):
            from bpftop.tui.cli.files import run_file_command

            return run_file_command(args[0], args[1:], _Parser)
        return _live(build_parsers()[0].parse_args(args))
    except BpftopError as err:
        print(f"bpftop: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: still one line (BPFTOP_DEBUG=1 shows the traceback)
        if os.environ.get("BPFTOP_DEBUG"):
            raise
        print(
            f"bpftop: internal error: {exc!r} (please report it; BPFTOP_DEBUG=1 shows where)",
            file=sys.stderr,
        )
        return 70


def _check(args: argparse.Namespace) -> CpuSampler | None:
    """Validate what can be validated before anything touches the kernel."""
    if not 1 <= args.frequency <= 100_000:
        raise UsageError(f"frequency {args.frequency} Hz is out of range", "use 1..100000")
    spec = parse_spec(args.probe) if args.probe else None
    sampler = CpuSampler(
        args.frequency,
        probe=spec,
        system_wide=args.all,
        follow_children=args.children,
        source=Path(os.environ.get("BPFTOP_BPF_SOURCE", PROGRAM_FILE)),
        unwind=args.unwind,
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
    check_privileges()
    import_bcc()
    return sampler


def _collector(args: argparse.Namespace, sampler: CpuSampler, interval_s: float) -> Collector:
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
            extra_pids=pids[1:],
            system_wide=args.all,
            launched=launched,
        )
    except BaseException:
        _end_launched(args)
        raise


def _end_launched(args: argparse.Namespace) -> None:
    """A command bpftop started ends with bpftop (SIGTERM; held ones are continued)."""
    proc = getattr(args, "launched", None)
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGCONT)
        proc.wait()


def _live(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise UsageError(f"interval {args.interval} s must be positive", "for example -i 0.5")
    sampler = _check(args)
    if sampler is None:
        return 0
    from bpftop.tui.app.app import BpftopApp  # Textual loads only for the live view
    from bpftop.tui.app.terminal import terminal_driver
    from bpftop.tui.collect.probe_complete import ProbeCompleter

    collector = _collector(args, sampler, args.interval)
    completer = ProbeCompleter(pids=[collector.pid] if collector.pid else [])
    app = BpftopApp(collector, interval_s=args.interval, completer=completer)
    tune_gc()
    with terminal_driver() as driver:
        app.driver_class = driver
        _on_signals(lambda: app.call_later(app.exit))
        try:
            app.run()
        finally:
            collector.stop()
            _end_launched(args)
    if app.error is not None:
        raise app.error
    return 0


def _record(args: argparse.Namespace) -> int:
    if args.duration is not None and args.duration <= 0:
        raise UsageError(f"duration {args.duration} s must be positive", "for example -d 10")
    _check_writable(args.output)
    sampler = _check(args)
    if sampler is None:
        return 0
    collector = _collector(args, sampler, interval_s=1.0)
    tune_gc()
    errors: list[BpftopError] = []
    done = threading.Event()
    sampling_since: list[float] = []  # -d counts from the first sample, not from launch
    started_ns: list[int] = []

    def on_snapshot(snap: Snapshot) -> None:
        if snap.phase is Phase.SAMPLING and not sampling_since:
            sampling_since.append(time.monotonic())
            started_ns.append(time.time_ns())

    _on_signals(done.set)
    collector.start(on_snapshot, on_error=errors.append)
    while not done.is_set() and not collector.finished.is_set():
        recorded_s = time.monotonic() - sampling_since[0] if sampling_since else 0.0
        if args.duration is not None and recorded_s >= args.duration:
            break
        done.wait(0.05)
    collector.stop()
    _end_launched(args)
    if errors:
        raise errors[0]
    snap = collector.last
    assert snap is not None  # the collector posts before it does anything else
    end_ns = time.time_ns()
    meta = snapshot_meta(
        snap, frequency_hz=args.frequency, start_ns=started_ns[0] if started_ns else end_ns,
        end_ns=end_ns, version=VERSION,
    )  # fmt: skip
    from bpftop.tui.cli.files import save_recording  # the writers load only when needed

    save_recording(snap, meta, args.output, args.format)
    return 0


def _check_writable(path: Path) -> None:
    """Fail before sampling, not after, when the output cannot be written."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory", "give a file name with -o")
    if not parent.is_dir():
        raise OutputError(
            f"cannot write {path}: no directory {parent}", "create it or choose another path"
        )
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise OutputError(f"cannot write {path}: permission denied", "choose a writable path")


def _on_signals(handler: Callable[[], object]) -> None:
    """Ctrl-C, SIGTERM and SIGHUP all mean: stop cleanly, keep what we have."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        handler()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
