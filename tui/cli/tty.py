"""The screen commands' one precondition: a terminal; and whether one went away.

Textual started without one (stdin or stdout a pipe or a file) shows nothing
and spins a core at full speed, so the live view and ``view`` refuse instead.
"""

from __future__ import annotations

import select
import sys

from bpftop.bpf.errors import UsageError


def has_terminal() -> bool:
    """Whether stdin and stdout are both a terminal."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def require_terminal(hint: str) -> None:
    """Raise a UsageError with ``hint`` (what to do without one) when there is no terminal."""
    if not has_terminal():
        raise UsageError("this view needs a terminal (stdin or stdout is not one)", hint)


GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL
"""What poll says of a descriptor whose terminal hung up, whose pipe's reader left, or is closed."""


def hung_up(fd: int) -> bool:
    """Whether ``fd`` is a terminal (or pipe) whose other side went away, or no longer open."""
    poller = select.poll()
    poller.register(fd, 0)  # no events asked for: hang-ups and errors are always reported
    try:
        return any(mask & GONE for _, mask in poller.poll(0))
    except OSError:
        return True
