"""Capturing what libbcc and the verifier print on file descriptor 2.

libbcc writes compiler diagnostics and the verifier log straight to fd 2,
bypassing Python. We point fd 2 at a temporary file while we compile and load,
so the log can be turned into one useful line (and does not scribble over a
running TUI, which draws through its own duplicate of the terminal's fd).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(slots=True)
class Captured:
    """Text written to fd 2 inside a :func:`capture_stderr` block."""

    text: str = ""


@contextmanager
def capture_stderr() -> Iterator[Captured]:
    captured = Captured()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured.text = tmp.read().decode(errors="replace")


_NOISE = re.compile(
    r"^(\d+: |processed \d+ insns|verification time|stack depth|"
    r"-- (BEGIN|END) PROG LOAD LOG|bpf: Failed to load program|;|\s*$|"
    r"HINT:|Loading program|libbpf:|In file included)"
)


def first_useful_line(log: str) -> str:
    """The line of a compiler/verifier log that says what went wrong.

    Clang errors win (``file:line: error: ...``); otherwise the verifier's
    complaint, which is the last non-instruction line before its statistics.
    """
    lines = [line.strip() for line in log.splitlines()]
    for line in lines:
        if " error: " in line or line.startswith("error:"):
            return line
    for line in reversed(lines):
        if not _NOISE.match(line):
            return line
    return ""
