"""Which file format a saved profile is in (a light module: the CLI loads it at start).

``format_for(path, name)`` picks the format from ``--format`` or the file
name (``.folded``/``.txt``, ``.speedscope.json``/``.json``, ``.pb.gz``/
``.pprof``, ``.svg``; anything else: folded). ``ProfileFileError`` is what
reading a saved profile raises.
"""

from __future__ import annotations

from pathlib import Path

from bpftop.bpf.errors import BpftopError

FORMATS = ("folded", "speedscope", "pprof", "svg")
SUFFIXES = {"folded": ".folded", "speedscope": ".speedscope.json", "pprof": ".pb.gz", "svg": ".svg"}
_BY_SUFFIX = (
    (".speedscope.json", "speedscope"), (".json", "speedscope"), (".pb.gz", "pprof"),
    (".pprof", "pprof"), (".svg", "svg"), (".folded", "folded"), (".txt", "folded"),
)  # fmt: skip


class ProfileFileError(BpftopError):
    """A saved profile that cannot be read, or an unknown format name."""

    exit_code = 2


def format_for(path: Path, name: str | None = None) -> str:
    """The output format: ``name`` if given, else by the file's extension (default folded)."""
    if name is not None:
        if name not in FORMATS:
            raise ProfileFileError(f"unknown format '{name}'", f"use one of {', '.join(FORMATS)}")
        return name
    lower = path.name.lower()
    return next((fmt for suffix, fmt in _BY_SUFFIX if lower.endswith(suffix)), "folded")
