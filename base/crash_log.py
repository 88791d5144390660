"""Where the tracebacks of bpftop's own bugs go: one log file per user.

An internal error is shown as one line (the CLI's, the collector's, a
background view job's notice); the traceback behind it is appended here, and
the line names the file. The file is ``$XDG_CACHE_HOME/bpftop/bpftop.log``
(``~/.cache/bpftop/bpftop.log``; root's under sudo): the user's own folder,
not /tmp where another user could plant a link for root to write through. It
is created only when there is something to write, mode 0600 (command lines
and paths may be private), and never followed through a symlink. Any module
may call :func:`log_exception`; it lives at the bottom layer for that.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from pathlib import Path

LOG_NAME = "bpftop.log"
_lock = threading.Lock()
_written: list[str] = []  # one line per logged error, this run


def log_path() -> Path:
    """The log file (whether or not anything was written to it yet)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bpftop" / LOG_NAME


def logged_errors() -> tuple[str, ...]:
    """The one-line summaries of the errors logged in this run, oldest first."""
    with _lock:
        return tuple(_written)


def log_exception(where: str, exc: BaseException) -> str:
    """Append ``exc``'s traceback to the log; the words to end its one line with:
    ``traceback in PATH`` (or why it could not be written)."""
    path = log_path()
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    lines = traceback.format_exception(exc)
    entry = f"--- {when} pid {os.getpid()} {where}\n{''.join(lines)}"
    with _lock:
        _written.append(f"{where}: {exc!r}")
        try:
            _append(path, entry)
        except OSError as err:
            return f"no traceback log: {path}: {err.strerror or err!r}"
    return f"traceback in {path}"


def install_thread_hook() -> None:
    """A thread that dies of an exception (the unwind-table builder, a hint
    lookup) logs its traceback and says so in one line, as the main thread does."""

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None or isinstance(args.exc_value, SystemExit):
            return
        name = args.thread.name if args.thread is not None else "a thread"
        where = log_exception(f"internal error in thread {name}", args.exc_value)
        print(
            f"bpftop: internal error in thread {name}: {args.exc_value!r} ({where})",
            file=sys.stderr,
        )

    threading.excepthook = hook


def _append(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace") as out:
        out.write(text)
