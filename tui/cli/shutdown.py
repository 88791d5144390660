"""Ending in time: Ctrl-C, SIGTERM, SIGHUP and a terminal that went away.

Owns :class:`Shutdown`. A signal (or the screen's terminal going away) asks
the run to stop cleanly (``stop``: the app quits, ``record`` stops sampling
and writes what it has) and arms a deadline: whatever still runs
``GRACE_S`` later (a compile in libbcc, a tick symbolizing a large stack
set, a write to a slow disk) is cut short. The cut is :func:`leave`: a
command bpftop started is ended rather than left stopped, a file being
written is removed rather than left half-written, and the process exits,
which closes every perf event, BPF program and uprobe it holds (the kernel
frees them with their descriptors). A terminal that went away is first
swapped for /dev/null, so nothing bpftop still says can fail on it.

``record`` (``keep_first``) writes what it was asked to after the first
signal, however long the last tick and the write take (at 999 Hz on the
scale workload stopping alone took over 1.5 s): that signal arms no
deadline. A second one does, and so does a signal that arrives while the
file is written (:meth:`writing`): the write gets ``GRACE_S`` to finish.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from bpftop.tui.cli.tty import hung_up
from bpftop.tui.collect.targets import end_command
from bpftop.tui.formats.atomic import abandon_unfinished

GRACE_S = 1.5
"""How long a stop may take after the signal before it is cut short (the bound is 2 s)."""

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def leave(code: int) -> NoReturn:
    """Exit now, whatever other threads still do (a compile in libbcc, a tick):
    the kernel frees what they made with the process; a normal exit would run
    BCC's and LLVM's exit hooks under a running compile, and join them."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def mute(fds: tuple[int, ...] = (0, 1, 2)) -> None:
    """Point each of ``fds`` that went away (a hung-up terminal, a closed pipe) at
    /dev/null: what is still written or flushed to them then succeeds, unseen."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in fds:
            if fd >= 0 and hung_up(fd):
                with contextlib.suppress(OSError):
                    os.dup2(null, fd)
    finally:
        os.close(null)


def _fileno(stream: object) -> int:
    """``stream``'s descriptor, or -1 (none, or closed)."""
    try:
        return int(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return -1


class Shutdown:
    """How this run ends when told to: ``stop`` first, the cut ``GRACE_S`` later."""

    def __init__(
        self,
        stop: Callable[[], object],
        *,
        cut_code: int | None = None,
        keep_first: bool = False,
        grace_s: float = GRACE_S,
    ) -> None:
        """``cut_code``: the exit code of a cut (None: 128 + the signal's number);
        ``keep_first``: the first signal before :meth:`writing` arms no deadline."""
        self._stop = stop
        self.keep_first = keep_first
        self._writing = False
        self.cut_code = cut_code
        self.grace_s = grace_s
        self.launched: subprocess.Popen[bytes] | None = None
        """A command bpftop started: ended by the cut."""
        self.signum: int | None = None
        """The first signal that asked to stop (SIGHUP for a lost terminal)."""
        self.cut_message = ""
        """What a cut says on stderr (the live view: nothing, it loses nothing)."""
        self._timer: threading.Timer | None = None
        self._lock = threading.RLock()  # a signal may arrive while the main thread holds it
        self.terminal_fds: tuple[int, ...] = (0, 1, 2, _fileno(sys.stderr))
        """Descriptors muted when the terminal goes (sys.stderr's: see keep_stderr)."""
        self.before_cut: Callable[[], object] = lambda: None
        """Put the terminal back as it was (the screen's raw mode), before a cut."""

    def install(self) -> None:
        """From now on Ctrl-C, SIGTERM and SIGHUP ask this run to stop."""
        for sig in SIGNALS:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.request(signum)

    def terminal_lost(self) -> None:
        """The screen's terminal went away (EIO, a hang-up): stop as on SIGHUP."""
        self.request(signal.SIGHUP)

    def request(self, signum: int) -> None:
        """Ask to stop (again: nothing new, the deadline already runs)."""
        if signum == signal.SIGHUP:
            mute(self.terminal_fds)
        with self._lock:
            first = self.signum is None
            self.signum = self.signum or signum
            if not (first and self.keep_first and not self._writing):
                self._arm()
        if first:
            self._stop()

    def writing(self, what: str) -> None:
        """``record`` writes ``what`` now: a signal from now on gives the write ``GRACE_S``."""
        with self._lock:
            self._writing = True
            self.cut_message = f"bpftop: stopped while writing {what}: not written"

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = threading.Timer(self.grace_s, self.cut)
            self._timer.daemon = True
            self._timer.start()

    def cut(self) -> None:
        """The stop took too long: end the command, drop a half-written file, exit."""
        abandon_unfinished()
        with contextlib.suppress(Exception):
            self.before_cut()
        end_command(self.launched, wait_s=0.2)
        if self.cut_message:
            with contextlib.suppress(OSError, ValueError):
                print(self.cut_message, file=sys.stderr)
        leave(128 + (self.signum or 0) if self.cut_code is None else self.cut_code)
