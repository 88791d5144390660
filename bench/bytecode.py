"""bpftop's own modules byte-compiled before a benchmark launches bpftop.

An installed bpftop has its bytecode: pip compiles a package it installs, and
scripts/setup.sh compiles the editable checkout's. An edited checkout's is
stale, and where PYTHONDONTWRITEBYTECODE is set (this machine's shells) Python
never writes it back, so every launch would compile bpftop's sources again:
the main thread's CPU at ready 0.41 -> 0.27 s with the bytecode (``record``,
two runs each), and py-spy saw it in SourceLoader.source_to_code for ~0.35 s
of wall time before the first tick. Benchmarks
time the installed tool, so each calls :func:`compile_bpftop` first.
"""

from __future__ import annotations

import compileall

from tests.conftest import ROOT

PACKAGE_FOLDERS = ("base", "bpf", "symbols", "tui")  # the ``bpftop`` package's (pyproject.toml)


def compile_bpftop() -> None:
    """Write the bytecode of every bpftop module whose cached one is missing or stale."""
    for folder in PACKAGE_FOLDERS:
        if not compileall.compile_dir(ROOT / folder, quiet=1, workers=0):
            raise SystemExit(f"bench: cannot byte-compile {ROOT / folder}")
