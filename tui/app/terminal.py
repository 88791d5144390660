"""The screen's terminal: a Textual driver on its own descriptor for the
terminal, that notices when the terminal goes away.

libbcc prints to fd 2 (compiler and verifier logs, lost-sample warnings), and
we point fd 2 elsewhere while compiling. Textual draws on ``sys.__stderr__``,
so the live view gets its own descriptor for the terminal, unaffected by that:
a duplicate of fd 2, or stdin's terminal opened again when the user
redirected stderr (``screen_fd``). The size is that terminal's too.

A terminal can go away under the app (a closed tmux pane, a dropped ssh
session): writes to it then fail with EIO and reads see end of file, and
unless it was the session's controlling terminal no SIGHUP says so.
Textual's output thread dies on the first failed write (the app then blocks
on its full queue) and its input thread spins on the end of file. Here a
failed write is dropped and reported, and a watch on the terminal's
descriptors reports a hang-up (poll's POLLHUP): either calls ``on_lost``
once, from whichever thread saw it first.
"""

from __future__ import annotations

import os
import select
import termios
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

LEAVE_SCREEN = (
    b"\x1b[<u\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?2004l"
    b"\x1b[?7h\x1b[?1004l\x1b[?1049l\x1b[?25h"
)
"""Keyboard protocol, mouse, paste, wrap and focus reports back; main screen; cursor shown."""

GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL
"""What poll reports for a terminal that hung up (or a descriptor closed)."""

WATCH_S = 0.2
"""How often the hang-up watch looks again when nothing happened (it also ends then)."""


class LossReport:
    """Calls ``on_lost`` once, whoever reports first."""

    def __init__(self, on_lost: Callable[[], object]) -> None:
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self.lost = False

    def report(self) -> None:
        with self._lock:
            if self.lost:
                return
            self.lost = True
        self._on_lost()


class TerminalOutput:
    """What Textual's output thread writes to: the terminal, until a write
    fails; then the loss is reported and everything after it is dropped."""

    def __init__(self, file: IO[str], loss: LossReport) -> None:
        self._file = file
        self._loss = loss

    def write(self, text: str) -> int:
        if not self._loss.lost:
            try:
                return self._file.write(text)
            except (OSError, ValueError):  # EIO; ValueError: closed meanwhile
                self._loss.report()
        return len(text)

    def flush(self) -> None:
        if not self._loss.lost:
            try:
                self._file.flush()
            except (OSError, ValueError):
                self._loss.report()

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return True


class HangupWatch:
    """A thread that reports the loss when any of ``fds`` hangs up, until stopped."""

    def __init__(self, fds: tuple[int, ...], loss: LossReport) -> None:
        self._poller = select.poll()
        for fd in fds:
            self._poller.register(fd, 0)
        self._loss = loss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bpftop-hangup", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and not self._loss.lost:
            try:
                events = self._poller.poll(int(WATCH_S * 1000))
            except OSError:
                return
            if any(mask & GONE for _, mask in events):
                self._loss.report()
                return
            if events:  # a descriptor polled without asking reports only GONE; never spin
                self._stop.wait(WATCH_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def screen_fd() -> int:
    """A new descriptor to draw on: fd 2's when it is a terminal, else one opened
    on stdin's terminal (the keys' terminal; stdout and stderr were redirected)."""
    if os.isatty(2):
        return os.dup(2)
    return os.open(os.ttyname(0), os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)


@contextmanager
def terminal_driver(on_lost: Callable[[], object] = lambda: None) -> Iterator[type[Driver]]:
    """A driver class drawing on the terminal (``screen_fd``); ``on_lost`` when it goes."""
    tty = os.fdopen(screen_fd(), "w", encoding="utf-8")
    loss = LossReport(on_lost)
    output = TerminalOutput(tty, loss)

    made: list[LinuxDriver] = []

    class TerminalDriver(LinuxDriver):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._file = output  # type: ignore[assignment]  # a file, as Textual uses it
            made.append(self)

        def _get_terminal_size(self) -> tuple[int, int]:
            """COLUMNS and LINES if set, else the size of the terminal drawn on."""
            columns, lines = os.environ.get("COLUMNS", ""), os.environ.get("LINES", "")
            if columns.isdigit() and lines.isdigit():
                return int(columns), int(lines)
            try:
                size = os.get_terminal_size(tty.fileno())
            except OSError:
                return super()._get_terminal_size()
            return size.columns or 80, size.lines or 25

        @staticmethod
        def restore() -> None:
            """Leave the screen's modes at once (an exit that cannot wait for Textual's)."""
            for driver in made:
                if driver.attrs_before is not None:
                    with suppress(termios.error):
                        termios.tcsetattr(driver.fileno, termios.TCSANOW, driver.attrs_before)
            if made and not loss.lost:
                with suppress(OSError):
                    os.write(tty.fileno(), LEAVE_SCREEN)

    watch = HangupWatch((0, tty.fileno()), loss)
    try:
        yield TerminalDriver
    finally:
        watch.stop()
        with suppress(OSError, ValueError):  # what is left to flush to a terminal that went
            tty.close()
