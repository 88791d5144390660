"""A uretprobe on a function a C++ exception is thrown through kills the
target (a kernel limit): `record --probe uretprobe:thrower:fail -- thrower`
says so in one line before attaching, and when the command dies of it names
its death (128+N, as perf), not "never fired"."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import BPFTOP


def test_a_uretprobe_through_a_throw_warns_first_and_reports_the_death(
    workloads: Path, tmp_path: Path
) -> None:
    thrower = workloads / "thrower"
    done = subprocess.run(
        [str(BPFTOP), "record", "--probe", f"uretprobe:{thrower}:_ZL4faill",
         "-o", str(tmp_path / "out.folded"), "--", str(thrower), "1000", "go"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    ours = [line for line in done.stderr.splitlines() if line.startswith("bpftop:")]
    assert done.returncode > 128, done.stderr  # the kernel limit: the command dies
    assert "uses C++ exceptions" in ours[0], done.stderr  # before anything else of ours
    assert any("died of SIG" in line and f"exit {done.returncode}" in line for line in ours)
    assert not any("never fired" in line for line in ours), done.stderr
    assert "Traceback" not in done.stderr


def test_a_uretprobe_on_c_code_gets_no_exception_warning(workloads: Path, tmp_path: Path) -> None:
    probed = workloads / "probed"
    done = subprocess.run(
        [str(BPFTOP), "record", "--probe", f"uretprobe:{probed}:main", "-d", "0.5",
         "-o", str(tmp_path / "out.folded"), "--", str(probed), "calls", "10"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert "C++ exceptions" not in done.stderr, done.stderr
