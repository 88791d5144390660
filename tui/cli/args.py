"""Every command line bpftop takes: the live view's, ``record``'s, ``view``'s and ``diff``'s.

Owns the parsers (:func:`build_parsers`, :func:`file_parsers`), the options
live and ``record`` share, :class:`Parser` (argparse that raises
:class:`UsageError` instead of exiting) and the version. Parsing only: what
the options mean is checked in :mod:`bpftop.tui.cli.session`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bpftop.bpf.errors import UsageError
from bpftop.tui.formats.kinds import FORMATS

VERSION = "0.1.0"


class Parser(argparse.ArgumentParser):
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
    p.add_argument(
        "--no-early",
        action="store_true",
        help="no perf_event samples while BPF compiles (their user stacks are frame-pointer "
        "walks): every sample from BPF, the first ones seconds later",
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
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="refresh interval (default 1)",
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
        help="where to write the profile (format by extension, or --format; - is stdout)",
    )
    record.add_argument(
        "--format",
        choices=FORMATS,
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
