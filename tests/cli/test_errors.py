"""Every error a user must fix: one line on stderr, a distinct exit code, no traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import BPFTOP, sampling

BAD_PROGRAM = r"""
#include <uapi/linux/ptrace.h>
#include <uapi/linux/bpf_perf_event.h>
BPF_HASH(targets, u32, u8, TARGETS_SIZE);
int on_cpu_sample(struct bpf_perf_event_data *ctx) {
    u32 key = 1;
    u8 *val = targets.lookup(&key);
    return *val;   /* no NULL check: the verifier must refuse this */
}
"""


def run_bpftop(
    *args: str, env: dict[str, str] | None = None, user: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    cmd = [str(BPFTOP), *args]
    if user is not None:
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


@pytest.fixture
def sleeper():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_no_such_pid() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert_one_line_error(
        run_bpftop("record", "-p", str(gone.pid), "-o", "/tmp/x.folded"),
        3,
        f"no process with pid {gone.pid}",
    )
    assert_one_line_error(run_bpftop("-p", str(gone.pid)), 3, "no process")


def test_zombie_target() -> None:
    """A process that has exited but not been reaped yet is not a target either."""
    zombie = subprocess.Popen(["true"])
    try:
        while Path(f"/proc/{zombie.pid}/stat").read_text().split()[2] != "Z":
            time.sleep(0.01)
        result = run_bpftop("record", "-p", str(zombie.pid), "-o", "/tmp/x.folded")
        assert_one_line_error(result, 3, "has exited")
    finally:
        zombie.wait()


def test_bad_arguments(sleeper: int) -> None:
    assert_one_line_error(run_bpftop("record", "-p", str(sleeper)), 2, "-o")
    assert_one_line_error(run_bpftop("-p", str(sleeper), "-F", "0"), 2, "frequency")
    assert_one_line_error(run_bpftop("-p", "abc"), 2, "invalid int")


def test_not_root(sleeper: int) -> None:
    result = run_bpftop(
        "record", "-p", str(sleeper), "-o", "/tmp/bpftop-nobody.folded", user="65534"
    )
    assert_one_line_error(result, 77, "root", "sudo")


def test_bcc_not_importable(sleeper: int, tmp_path: Path) -> None:
    fake = tmp_path / "bcc"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise ImportError('libbcc.so.0: cannot open shared object')\n"
    )
    result = run_bpftop(
        "record",
        "-p",
        str(sleeper),
        "-o",
        str(tmp_path / "o.folded"),
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert_one_line_error(result, 4, "BCC", "python3-bpfcc")


def test_program_rejected_by_verifier(sleeper: int, tmp_path: Path) -> None:
    bad = tmp_path / "bad.bpf.c"
    bad.write_text(BAD_PROGRAM)
    result = run_bpftop(
        "record",
        "-p",
        str(sleeper),
        "-o",
        str(tmp_path / "o.folded"),
        "-d",
        "1",
        env={"BPFTOP_BPF_SOURCE": str(bad)},
    )
    line = assert_one_line_error(result, 5, "rejected")
    assert "invalid mem access" in line or "map_value_or_null" in line, line
    assert not (tmp_path / "o.folded").exists()


def test_output_not_writable_up_front(sleeper: int) -> None:
    result = run_bpftop("record", "-p", str(sleeper), "-o", "/nonexistent-dir/out.folded")
    assert_one_line_error(result, 6, "/nonexistent-dir")


def test_output_vanishes_during_recording_rescues_data(workloads: Path, tmp_path: Path) -> None:
    target = subprocess.Popen([str(workloads / "split"), "30"])
    outdir = tmp_path / "sub"
    outdir.mkdir()
    try:
        proc = subprocess.Popen(
            [
                str(BPFTOP),
                "record",
                "-p",
                str(target.pid),
                "-o",
                str(outdir / "o.folded"),
                "-d",
                "5",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60  # the compile: 3-10 s, more on a busy machine
        while not sampling(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sampling(proc.pid), "record never attached its perf events"
        shutil.rmtree(outdir)
        _, stderr = proc.communicate(timeout=60)
    finally:
        target.kill()
        target.wait()
    result = subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)
    line = assert_one_line_error(result, 6, "saved to")
    rescue = Path(line.split("saved to ")[1].split(" instead")[0])
    try:
        assert "hot_a" in rescue.read_text()
    finally:
        rescue.unlink()


def test_print_bpf_needs_no_root() -> None:
    result = run_bpftop("-p", "1", "--print-bpf", user="65534")
    assert result.returncode == 0, result.stderr
    assert "get_stackid" in result.stdout and "#define COUNTS_SIZE" in result.stdout


def test_load_error_without_a_message_is_still_one_line() -> None:
    from bpftop.bpf.program import _load_error

    err = _load_error(KeyError(), "")
    assert "KeyError()" in str(err) and "\n" not in str(err)
