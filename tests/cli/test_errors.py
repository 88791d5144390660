"""Every error a user must fix: one line on stderr, a distinct exit code, no traceback.

These need neither root nor BPF (a root run drops to uid 65534 where the
test is about not being root); the ones only root can reach are in
tests/bpf/test_errors.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import BPFTOP


def run_bpftop(
    *args: str, env: dict[str, str] | None = None, user: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run bpftop; ``user``: as that uid (when we are root; else we already are not root)."""
    cmd = [str(BPFTOP), *args]
    if user is not None and os.geteuid() == 0:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("bpftop: ")
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_no_such_pid(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert_one_line_error(
        run_bpftop("record", "-p", str(gone.pid), "-o", str(tmp_path / "x.folded")),
        3,
        f"no process with pid {gone.pid}",
    )
    assert_one_line_error(run_bpftop("-p", str(gone.pid)), 3, "no process")


def test_bad_arguments(sleeper: int) -> None:
    assert_one_line_error(run_bpftop("record", "-p", str(sleeper)), 2, "-o")
    assert_one_line_error(run_bpftop("-p", str(sleeper), "-F", "0"), 2, "frequency")
    assert_one_line_error(run_bpftop("-p", "abc"), 2, "invalid int")


def test_not_root(sleeper: int) -> None:
    result = run_bpftop(
        "record", "-p", str(sleeper), "-o", "/tmp/bpftop-nobody.folded", user="65534"
    )
    assert_one_line_error(result, 77, "root", "sudo")


def test_output_not_writable_up_front(sleeper: int) -> None:
    result = run_bpftop("record", "-p", str(sleeper), "-o", "/nonexistent-dir/out.folded")
    assert_one_line_error(result, 6, "/nonexistent-dir")


def test_print_bpf_needs_no_root() -> None:
    result = run_bpftop("-p", "1", "--print-bpf", user="65534")
    assert result.returncode == 0, result.stderr
    assert "get_stackid" in result.stdout and "#define COUNTS_SIZE" in result.stdout


def test_load_error_without_a_message_is_still_one_line() -> None:
    from bpftop.bpf.program_text import load_error as _load_error

    err = _load_error(KeyError(), "")
    assert "KeyError()" in str(err) and "\n" not in str(err)
