"""``bpftop -- COMMAND`` on a real terminal (a pty): the header names the
command as the user gave it from the first frame (never the shell that holds
it), and ``bpftop -- cmd > file 2>&1`` draws on the terminal while the
command's output goes to the file, as the user's shell asked."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from tests.conftest import BPFTOP

COMMAND = ["sh", "-c", "echo to-the-file; exec sleep 30"]


class Screen:
    """Everything bpftop wrote to the pty, read on a thread."""

    def __init__(self, master: int) -> None:
        self.data = bytearray()
        self._master = master
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self._master, 65536):
                self.data += chunk
        except OSError:
            pass

    def wait_for(self, text: bytes, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while text not in self.data and time.monotonic() < deadline:
            time.sleep(0.05)
        return text in self.data


def test_launch_redirected_draws_on_the_terminal_and_names_the_command(tmp_path: Path) -> None:
    master, slave = os.openpty()
    out = tmp_path / "out.txt"
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "40"}
    with out.open("wb") as file:
        bpftop = subprocess.Popen(
            [str(BPFTOP), "--", *COMMAND],
            stdin=slave, stdout=file, stderr=file, env=env, cwd=tmp_path, start_new_session=True,
        )  # fmt: skip
    os.close(slave)
    screen = Screen(master)
    try:
        assert screen.wait_for(b"sh -c 'echo to-the-file; exec sleep 30'", 60), bytes(screen.data)
        assert screen.wait_for(b"sampling", 120), "BPF never took over"
        assert screen.wait_for(b"sleep 30", 20), "the exec'd command is named after its exec"
        os.write(master, b"q")
        assert bpftop.wait(timeout=30) == 0
    finally:
        bpftop.kill()
        bpftop.wait()
        os.close(master)
    assert b"kill -STOP" not in screen.data, "the holding shell was shown"
    written = out.read_text()
    assert written == "to-the-file\n", written


def test_a_launched_shell_whose_child_does_the_work_suggests_children(
    tmp_path: Path, workloads: Path
) -> None:
    """``-- sh -c 'split 60; true'``: sh forks split and waits (``; true`` keeps
    it from exec'ing it): sh gets almost no samples, and the header says so."""
    master, slave = os.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200", "LINES": "40"}
    command = ["sh", "-c", f"{workloads / 'split'} 60; true"]
    bpftop = subprocess.Popen(
        [str(BPFTOP), "--", *command],
        stdin=slave, stdout=slave, stderr=slave, env=env, cwd=tmp_path, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    screen = Screen(master)
    try:
        assert screen.wait_for(b"child process run unprofiled: ", 60), bytes(screen.data[-3000:])
        assert screen.wait_for(b"--children", 5)
        os.write(master, b"q")
        assert bpftop.wait(timeout=30) == 0
    finally:
        bpftop.kill()
        bpftop.wait()
        os.close(master)
