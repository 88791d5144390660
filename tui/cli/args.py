"""Every command line bpftop takes: the live view's, ``record``'s, ``view``'s and ``diff``'s.

Owns the parsers (:func:`build_parsers`, :func:`file_parsers`), the options
live and ``record`` share, :class:`Parser` (argparse that raises
:class:`UsageError` instead of exiting) and the version, and turns a parsed
command line into the typed :class:`~bpftop.tui.collect.options.Options`
(:func:`options_from`, :func:`parse_options`) once. The argument types refuse
what can never be right (a pid past ``pid_max``, a NaN or endless interval,
an empty probe spec) and :func:`options_from` settles the options that
conflict (``-F`` against ``--probe profile:hz:N``); what needs the system
(does the process exist, are we root) is checked in
:mod:`bpftop.tui.cli.session`.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

from bpftop.base.errors import UsageError
from bpftop.bpf.probes import parse_spec
from bpftop.tui.collect.options import (
    DEFAULT_HOT_MIN_PCT,
    DEFAULT_HZ,
    DEFAULT_INTERVAL_S,
    Options,
    Recording,
)
from bpftop.tui.formats.registry import NAMES

VERSION = "0.1.0"
MAX_INTERVAL_S = 60.0
MIN_INTERVAL_S = 0.1  # faster ticks only spin the collector; the screen cannot follow
PID_MAX_FILE = Path("/proc/sys/kernel/pid_max")
PID_MAX_LIMIT = 4_194_304
"""The kernel's own ceiling for pid_max (when the file cannot be read)."""


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message, f"see '{self.prog} --help'")


def pid_max() -> int:
    """The largest pid this kernel hands out (/proc/sys/kernel/pid_max)."""
    try:
        return int(PID_MAX_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return PID_MAX_LIMIT


def pid_arg(text: str) -> int:
    """A ``-p`` value: an integer in 1..pid_max."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 1 <= value <= pid_max():
        raise argparse.ArgumentTypeError(f"pid {text} is out of range (1..{pid_max()})")
    return value


def seconds_arg(most_s: float | None, least_s: float = 0.0) -> Callable[[str], float]:
    """A type for a duration: a finite number of seconds > 0, >= ``least_s`` and
    <= ``most_s``."""

    def seconds(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid number of seconds: {text!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text} s: give a finite number of seconds > 0")
        if value < least_s:
            raise argparse.ArgumentTypeError(f"{text} s is too short (at least {least_s:g} s)")
        if most_s is not None and value > most_s:
            raise argparse.ArgumentTypeError(f"{text} s is too long (at most {most_s:g} s)")
        return value

    return seconds


def percent_arg(text: str) -> float:
    """A share in percent: a finite number from 0 to 100."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid percentage: {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text}: give a percentage from 0 to 100")
    return value


def probe_arg(text: str) -> str:
    """A ``--probe`` value: not empty (an empty spec is not the default probe)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty probe spec (leave --probe out for CPU sampling)")
    return text


class Once(argparse.Action):
    """An option given at most once: a second one is an error, never a silent
    replacement (two ``--probe`` would count one probe and drop the other)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            raise argparse.ArgumentError(
                self, f"given twice ({getattr(namespace, self.dest)} and {values}): give one"
            )
        setattr(namespace, self.dest, values)


def parse_options(argv: list[str], *, recording: bool) -> Options:
    """The live view's (or ``record``'s) options from its arguments (``record``
    itself not among them); an argument that can never be right raises
    :class:`UsageError`."""
    live, record = build_parsers()
    return options_from((record if recording else live).parse_args(argv), recording=recording)


def options_from(parsed: argparse.Namespace, *, recording: bool) -> Options:
    """The typed options of a parsed command line, settled against each other:
    ``-F`` (None when not given) against ``--probe profile:hz:N`` (a profile
    probe's rate becomes the frequency); ``--gil`` turns early samples off."""
    spec = parse_spec(parsed.probe) if parsed.probe else None
    rate = spec.number if spec is not None and spec.is_profile else None
    if parsed.frequency is not None and rate is not None and rate != parsed.frequency:
        raise UsageError(
            f"-F {parsed.frequency} and --probe {parsed.probe} ask for two sampling rates",
            "give one of them",
        )
    frequency = parsed.frequency if parsed.frequency is not None else rate
    frequency = DEFAULT_HZ if frequency is None else frequency
    command = parsed.command[1:] if parsed.command[:1] == ["--"] else parsed.command
    record = Recording(parsed.output, parsed.format, parsed.duration) if recording else None
    return Options(
        pids=tuple(parsed.pids or ()),
        all_processes=parsed.all,
        command=tuple(command),
        children=parsed.children,
        frequency=frequency,
        probe=parsed.probe,
        unwind=parsed.unwind,
        offsets=parsed.offsets,
        mangled=parsed.mangled,
        short_names=parsed.names == "short",
        early=not (parsed.no_early or parsed.gil),  # perf_event cannot tell who holds the GIL
        python_frames=not parsed.no_python,
        gil=parsed.gil,
        idle=parsed.idle,
        print_bpf=parsed.print_bpf,
        interval_s=DEFAULT_INTERVAL_S if recording else parsed.interval,
        hot_min_pct=DEFAULT_HOT_MIN_PCT if recording else parsed.hot_min,
        recording=record,
    )


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-p",
        "--pid",
        type=pid_arg,
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
        default=None,
        metavar="HZ",
        help="samples per second per CPU (default 99)",
    )
    p.add_argument(
        "--probe",
        type=probe_arg,
        action=Once,
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
        "--names",
        choices=("full", "short"),
        default="full",
        help="C++ function names in full, with parameters (the default), or short, as perf "
        "shows them: no parameters, no return type (the live view's F key switches)",
    )
    p.add_argument(
        "--unwind",
        choices=("auto", "dwarf", "fp"),
        default="auto",
        help="user stacks: .eh_frame tables where they exist, else frame pointers (auto, "
        "the default); tables only (dwarf); frame pointers only (fp)",
    )
    p.add_argument(
        "--no-early",
        action="store_true",
        help="no perf_event samples before BPF is ready (they have no Python frames: a "
        "Python process's are left out anyway): every sample from BPF, the first ones later",
    )
    p.add_argument(
        "--no-python",
        action="store_true",
        help="native frames only for CPython processes (no Python functions merged in)",
    )
    p.add_argument(
        "--gil",
        action="store_true",
        help="CPython processes: only samples of threads holding the GIL (py-spy's --gil); "
        "implies --no-early",
    )
    p.add_argument(
        "--idle",
        action="store_true",
        help="offcpu: keep idle Python samples (innermost frame a known wait: threading's wait, "
        "selectors' select): record writes them, the live view starts with them shown "
        "(I toggles); by default they are left out and counted, as py-spy does",
    )
    p.add_argument("--print-bpf", action="store_true", help="print the BPF program and exit")
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="-- COMMAND ARGS...: start COMMAND held, attach, then let it run",
    )


def build_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    live = Parser(
        prog="bpftop",
        description="Live eBPF stack profiler for one process.",
        epilog="Headless mode: bpftop record -p PID -d SECONDS -o FILE; saved profiles: "
        "bpftop view FILE, bpftop diff BASE NEW",
    )
    _common(live)
    live.add_argument(
        "-i",
        "--interval",
        type=seconds_arg(MAX_INTERVAL_S, MIN_INTERVAL_S),
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"refresh interval (default 1, {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g})",
    )
    live.add_argument(
        "--hot-min",
        type=percent_arg,
        default=DEFAULT_HOT_MIN_PCT,
        metavar="PCT",
        help="the call tree's hot path (opened at start and by e) opens no frame under "
        "PCT%% of all samples (default 1)",
    )
    live.add_argument("--version", action="version", version=f"bpftop {VERSION}")
    record = Parser(
        prog="bpftop record",
        description="Sample without a screen; write folded stacks, speedscope JSON, "
        "pprof or an SVG flame graph.",
    )
    _common(record)
    record.add_argument(
        "-d",
        "--duration",
        type=seconds_arg(None),
        metavar="SECONDS",
        help="how long to record (default: until Ctrl-C or the process exits)",
    )
    record.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="FILE",
        help="where to write the profile (format by extension, or --format; - is stdout)",
    )
    record.add_argument(
        "--format",
        choices=NAMES,
        help="output format (default: from the file name: .folded/.txt, .speedscope.json, "
        ".pb.gz, .svg; else folded)",
    )
    return live, record


def file_parsers() -> dict[str, argparse.ArgumentParser]:
    """The ``view`` and ``diff`` sub-command parsers."""
    view_parser = Parser(
        prog="bpftop view", description="Open a saved profile (folded, speedscope, pprof)."
    )
    view_parser.add_argument("file", type=Path, metavar="FILE")
    diff_parser = Parser(
        prog="bpftop diff", description="Compare two saved profiles: NEW against BASE."
    )
    diff_parser.add_argument("base", type=Path, metavar="BASE")
    diff_parser.add_argument("new", type=Path, metavar="NEW")
    diff_parser.add_argument(
        "--folded",
        action="store_true",
        help="print 'stack BASE_COUNT NEW_COUNT' lines (flamegraph.pl difference graphs)",
    )
    return {"view": view_parser, "diff": diff_parser}
