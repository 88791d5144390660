"""The screen commands' one precondition: a terminal; whether one went away;
and their exit code once the app ended (:func:`screen_exit_code`).

Textual started without one (stdin a pipe or a file) shows nothing and spins
a core at full speed, so the live view and ``view`` refuse instead. Keys come
from stdin's terminal, and the screen is drawn on that terminal whatever
stdout and stderr are: ``bpftop -- cmd > file`` sends the command's output to
the file, as the user's shell asked, and the view to the terminal.
"""

from __future__ import annotations

import os
import select
import sys

from bpftop.base.errors import InternalError, UsageError


def has_terminal() -> bool:
    """Whether stdin is a terminal (the one the screen is drawn on)."""
    return sys.stdin.isatty()


def require_terminal(hint: str) -> None:
    """Raise a UsageError with ``hint`` (what to do without one) when there is no
    terminal, or one that says it cannot draw (TERM=dumb: no cursor movement)."""
    if not has_terminal():
        raise UsageError("this view needs a terminal (stdin is not one)", hint)
    if os.environ.get("TERM") == "dumb":
        raise UsageError(
            "this view needs a terminal that can draw, and TERM=dumb says this one cannot",
            f"set TERM to the terminal's type (e.g. TERM=xterm-256color); {hint}",
        )


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


def screen_exit_code(crash: str | None, return_code: int | None) -> int:
    """0, or 70 when the app ended by a crash or with an error code (said on
    stderr here): an internal error never exits 0."""
    if crash is None and not return_code:
        return 0
    print(f"bpftop: {crash or 'internal error: the app ended with an error'}", file=sys.stderr)
    return InternalError.exit_code
