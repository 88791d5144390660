"""BCC missing: CPU sampling goes on over perf_event, and bpftop says what is missing.

A ``bcc`` package that raises ImportError, first on PYTHONPATH, stands for a
machine without BCC's bindings (as in tests/test_bpf_gate.py). Samples then
come from perf_event_open alone, for ``-p`` (sampling from launch) and for a
command bpftop starts (held until BPF would attach: let go once BPF cannot
load); probes only BPF can serve still end with the one-line error.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.bpf.test_early import cpu_s
from tests.bpf.test_record import parse_folded
from tests.cli.test_errors import assert_one_line_error, run_bpftop

MISSING = "cannot import BCC's Python bindings (libbcc.so.0: no such file)"


@pytest.fixture
def no_bcc(tmp_path: Path) -> dict[str, str]:
    fake = tmp_path / "hidden" / "bcc"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('libbcc.so.0: no such file')\n")
    return {"PYTHONPATH": str(fake.parent)}


def assert_perf_event_profile(
    result: subprocess.CompletedProcess[str], out: Path, at_least: float = 40
) -> None:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    warning = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1, result.stderr
    assert warning[0].startswith(f"bpftop: warning: sampled with perf_event only: {MISSING}")
    stacks = parse_folded(out)
    assert sum(stacks.values()) >= at_least, stacks
    assert any({"main", "run", "a", "b"} <= set(s) for s in stacks), stacks


def test_a_pid_is_sampled_over_perf_event(
    workloads: Path, tmp_path: Path, no_bcc: dict[str, str]
) -> None:
    target = subprocess.Popen([str(workloads / "chain"), "30"])
    out = tmp_path / "pid.folded"
    try:
        before = cpu_s(target.pid)
        result = run_bpftop("record", "-p", str(target.pid), "-d", "2", "-o", str(out), env=no_bcc)
        used = cpu_s(target.pid) - before
    finally:
        target.kill()
        target.wait()
    # The CPU time the target had while bpftop ran (start-up and exit included)
    # at 99 Hz: half of it is counted even when a busy machine starts bpftop slowly.
    assert used > 0.5, "the target ran"
    assert_perf_event_profile(result, out, at_least=0.5 * used * 99)


def test_a_launched_command_is_let_go_and_sampled(
    workloads: Path, tmp_path: Path, no_bcc: dict[str, str]
) -> None:
    out = tmp_path / "command.folded"
    # chain spins all the 2 s recorded at 99 Hz (~198 samples): a busy 2-core
    # machine may halve its share, not take it all.
    result = run_bpftop(
        "record", "-d", "2", "-o", str(out), "--", str(workloads / "chain"), "30", env=no_bcc
    )
    assert_perf_event_profile(result, out)


def test_a_probe_only_bpf_serves_still_needs_bcc(
    workloads: Path, tmp_path: Path, no_bcc: dict[str, str]
) -> None:
    target = subprocess.Popen([str(workloads / "chain"), "30"])
    try:
        result = run_bpftop(
            "record", "-p", str(target.pid), "--probe", "offcpu", "-d", "1",
            "-o", str(tmp_path / "x.folded"), env=no_bcc,
        )  # fmt: skip
    finally:
        target.kill()
        target.wait()
    assert_one_line_error(result, 4, MISSING, "apt-get install python3-bpfcc")
    assert not (tmp_path / "x.folded").exists()
