"""docs/usage.md: "130 is an interrupt (Ctrl-C)": bpftop stopped by SIGINT while it waits
(here: ``diff --folded`` opening a FIFO nobody writes) exits 130, without a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import BPFTOP


def blocked_in_open(pid: int) -> bool:
    """Whether the process waits for a FIFO's writer (its kernel wait channel says so)."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "wait_for_partner"
    except OSError:
        return False


def test_ctrl_c_while_waiting_exits_130(tmp_path: Path) -> None:
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)
    child = subprocess.Popen(
        [str(BPFTOP), "diff", "--folded", str(fifo), str(fifo)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not blocked_in_open(child.pid) and time.monotonic() < deadline:
            assert child.poll() is None, child.communicate()
            time.sleep(0.05)
        assert blocked_in_open(child.pid), "bpftop never came to open the FIFO"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 130, err
    assert out == "" and "Traceback" not in err
