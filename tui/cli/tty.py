"""The screen commands' one precondition: a terminal.

Textual started without one (stdin or stdout a pipe or a file) shows nothing
and spins a core at full speed, so the live view and ``view`` refuse instead.
"""

from __future__ import annotations

import sys

from bpftop.bpf.errors import UsageError


def has_terminal() -> bool:
    """Whether stdin and stdout are both a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def require_terminal(hint: str) -> None:
    """Raise a UsageError with ``hint`` (what to do without one) when there is no terminal."""
    if not has_terminal():
        raise UsageError("this view needs a terminal (stdin or stdout is not one)", hint)
