"""``record -- COMMAND`` exits as perf does: with the command's own status, or
128+N when signal N ended it, after writing the profile; 0 when bpftop ended
the command itself (``-d``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import BPFTOP


def record_command(out: Path, *command: str, extra: tuple[str, ...] = ()) -> tuple[int, str]:
    done = subprocess.run(
        [str(BPFTOP), "record", "-o", str(out), *extra, "--", *command],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (("/bin/false",), 1),
        (("/bin/sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 7"), 7),
        (("/bin/sh", "-c", "kill -USR1 $$"), 128 + 10),
    ],
    ids=["false", "exit-7", "SIGUSR1"],
)
def test_record_returns_the_commands_status_after_writing(
    command: tuple[str, ...], code: int, tmp_path: Path
) -> None:
    out = tmp_path / "out.folded"
    returncode, err = record_command(out, *command)
    assert returncode == code, err
    assert out.exists() and "wrote" in err, err


def test_record_that_ends_the_command_itself_exits_0(workloads: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.folded"
    returncode, err = record_command(out, str(workloads / "split"), "30", extra=("-d", "1"))
    assert returncode == 0, err
    assert "hot_a" in out.read_text()
