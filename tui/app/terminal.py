"""A Textual driver that draws on its own duplicate of the terminal's fd 2.

libbcc prints to fd 2 (compiler and verifier logs, lost-sample warnings), and
we point fd 2 elsewhere while compiling. Textual draws on ``sys.__stderr__``,
so the live view gets its own descriptor for the terminal, unaffected by that.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver


@contextmanager
def terminal_driver() -> Iterator[type[Driver]]:
    tty = os.fdopen(os.dup(2), "w", encoding="utf-8")

    class TerminalDriver(LinuxDriver):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._file = tty

    try:
        yield TerminalDriver
    finally:
        tty.close()
