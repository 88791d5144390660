"""`bpftop record -o` on what is not a plain file, against the real kernel:
the reported case (a copy of /dev/full) and `-o -`."""

from __future__ import annotations

import os
import stat
import subprocess
from collections import Counter
from pathlib import Path

from tests.bpf.test_record import record
from tests.cli.test_errors import assert_one_line_error


def test_a_full_device_fails_and_stays_a_device_and_dash_is_stdout(
    workloads: Path, tmp_path: Path
) -> None:
    full = tmp_path / "full"
    os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    target = subprocess.Popen([str(workloads / "split"), "60"])
    try:
        failed = record(target.pid, full, "-d", "1")
        to_stdout = record(target.pid, Path("-"), "-d", "1")
    finally:
        target.kill()
        target.wait()
    line = assert_one_line_error(failed, 6, f"cannot write {full}: No space left on device")
    assert "wrote" not in line
    st = os.lstat(full)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 7)
    rescue = Path(line.split("saved to ")[1].split(" instead")[0])
    try:
        assert "hot_a" in rescue.read_text()
    finally:
        rescue.unlink()

    assert to_stdout.returncode == 0, to_stdout.stderr
    assert "samples to standard output" in to_stdout.stderr
    leaves = Counter[str]()
    for folded in to_stdout.stdout.splitlines():
        stack, _, count = folded.rpartition(" ")
        leaves[stack.split(";")[-1]] += int(count)
    assert leaves["hot_a"] > 0 and sum(leaves.values()) > 20, leaves
    assert not (Path.cwd() / "-").exists()
