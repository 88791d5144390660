"""What the user asked for: one typed, frozen value built once from the command line.

Owns :class:`Options` (targets, sampling, naming, the live view's refresh and
``record``'s output) and :class:`Recording`. :mod:`bpftop.tui.cli.args` builds
them (:func:`~bpftop.tui.cli.args.parse_options`); everything below takes them
as they are: nothing sets or adds fields on the way down. What a run learns as
it goes (the command it started, the perf_event sampler opened before the
imports) is passed beside the options, never stored in them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_HZ = 99
DEFAULT_INTERVAL_S = 1.0
DEFAULT_HOT_MIN_PCT = 1.0


@dataclass(frozen=True, slots=True)
class Recording:
    """``bpftop record``'s own options: where the profile goes, and for how long."""

    output: Path
    """The file to write (``-`` is standard output)."""
    output_format: str | None = None
    """``--format``; None: from the file name."""
    duration_s: float | None = None
    """``-d``, counted from the first sample that counts; None: until the end."""


@dataclass(frozen=True, slots=True)
class Options:
    """One run's options, live or ``record`` (``recording`` set)."""

    pids: tuple[int, ...] = ()
    """``-p`` targets, in the order given (the first is the header's)."""
    all_processes: bool = False
    """``-a``: every process."""
    command: tuple[str, ...] = ()
    """``-- COMMAND ARGS``: started held, let go once attached."""
    children: bool = False
    """``--children``: follow what the targets fork."""
    frequency: int = DEFAULT_HZ
    """Samples per second per CPU (``-F``, or the rate of ``--probe profile:hz:N``)."""
    probe: str | None = None
    """``--probe`` as given; None: CPU sampling at ``frequency``."""
    unwind: str = "auto"
    """``--unwind``: auto, dwarf or fp."""
    offsets: bool = False
    """``--offsets``: frames as function+0xOFF."""
    mangled: bool = False
    """``--mangled``: names as the symbol table spells them."""
    short_names: bool = False
    """``--names short``: C++ and Rust names without parameters, as perf."""
    early: bool = True
    """perf_event samples before BPF is ready (off: ``--no-early``, or ``--gil``)."""
    python_frames: bool = True
    """Python frames merged into CPython stacks (off: ``--no-python``)."""
    gil: bool = False
    """``--gil``: only samples of Python threads holding the GIL."""
    idle: bool = False
    """``--idle``: keep idle Python samples of ``offcpu``."""
    print_bpf: bool = False
    """``--print-bpf``: print the program and exit."""
    interval_s: float = DEFAULT_INTERVAL_S
    """The live view's refresh (``-i``); ``record`` ticks every second."""
    hot_min_pct: float = DEFAULT_HOT_MIN_PCT
    """``--hot-min``: the hot path opens no frame under this share of all samples."""
    recording: Recording | None = None
    """``record``'s options; None for the live view."""
