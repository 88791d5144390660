"""`bpftop view` and `bpftop diff` on a terminal end within 2 s of SIGTERM,
SIGINT or SIGHUP, as the live view does, and leave the terminal as they found
it (not in raw mode)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import BPFTOP

BOUND_S = 2.0


def _drain_until(master: int, needle: bytes, timeout_s: float) -> bool:
    """Read what the screen draws until ``needle`` shows (True) or the time is up."""
    seen = b""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return False
            seen = (seen + chunk)[-200_000:]
            if needle in seen:
                return True
    return False


def _screen_then_signal(argv: list[str], signum: int) -> tuple[float, int, list[int], list[int]]:
    """Run ``argv`` on a new terminal, send ``signum`` once it drew; seconds to end,
    exit code, and the terminal's local modes before the run and after it."""
    master, slave = os.openpty()
    try:
        before = termios.tcgetattr(slave)
        proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
            env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"},
        )  # fmt: skip
        try:
            assert _drain_until(master, b"hot_fn", 60), "the screen never drew the profile"
            time.sleep(0.3)
            sent = time.monotonic()
            proc.send_signal(signum)
            while proc.poll() is None and time.monotonic() - sent < 10:
                _drain_until(master, b"\0never", 0.05)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        after = termios.tcgetattr(slave)
        return took, proc.returncode, before, after
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
@pytest.mark.parametrize("command", ["view", "diff"])
def test_file_screens_end_on_a_signal_and_restore_the_terminal(
    tmp_path: Path, command: str, signum: int
) -> None:
    base, new = tmp_path / "base.folded", tmp_path / "new.folded"
    base.write_text("main;hot_fn 5\nmain;cold_fn 5\n")
    new.write_text("main;hot_fn 9\nmain;cold_fn 1\n")
    files = [str(new)] if command == "view" else [str(base), str(new)]
    took, code, before, after = _screen_then_signal([str(BPFTOP), command, *files], signum)
    assert took < BOUND_S, f"{command} took {took:.2f} s to end after signal {signum}"
    assert code is not None and code >= 0, f"{command} died of signal {-code}"
    local = termios.ICANON | termios.ECHO
    assert after[3] & local == before[3] & local, "the terminal was left in raw mode"
