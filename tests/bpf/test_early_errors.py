"""A probe that cannot be attached is reported before the BPF compile.

Each case runs ``bpftop record`` with a program that cannot compile
(BPFTOP_BPF_SOURCE): had the compile run first, the exit code would be 5
(BpfLoadError), so exit code 2 with the probe's own one-line error proves the
check came before it. The time bound is the user's view of the same thing
(the compile alone takes longer on this VM kind).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from bpftop.bpf.resolve import kprobes_available
from tests.cli.test_errors import assert_one_line_error, run_bpftop

FAST_S = 2.0  # bpftop starts and fails in ~0.6 s; the compile alone takes 2.5-4 s
NO_PMU = not Path("/sys/bus/event_source/devices/cpu").exists()
CASES = [
    ("tracepoint:nope:nope", "no tracepoint nope:nope (see /sys/kernel/tracing/events)"),
    ("uprobe:/nonexistent/lib.so:f", "no file /nonexistent/lib.so (give an existing path"),
    ("uprobe:c:no_such_function_x", "no function 'no_such_function_x' in /"),
    ("uretprobe:nosuchlib:f", "no binary or library 'nosuchlib' is mapped by the target"),
    pytest.param(
        "kprobe:vfs_read",
        "kprobes are not available: this kernel was built without CONFIG_KPROBES",
        marks=pytest.mark.skipif(kprobes_available(), reason="this kernel has kprobes"),
    ),
    pytest.param(
        "hardware:cycles",
        "hardware event cycles is not supported on this machine",
        marks=pytest.mark.skipif(not NO_PMU, reason="this machine has a hardware PMU"),
    ),
]


def record(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    broken = tmp_path / "broken.bpf.c"
    broken.write_text("this is not C\n")
    start = time.monotonic()
    result = run_bpftop(
        "record", "-d", "1", "-o", str(tmp_path / "x.folded"), *args,
        env={"BPFTOP_BPF_SOURCE": str(broken)},
    )  # fmt: skip
    return result, time.monotonic() - start


@pytest.mark.parametrize(("spec", "message"), CASES)
def test_probe_error_comes_before_the_compile(
    sleeper: int, tmp_path: Path, spec: str, message: str
) -> None:
    result, took_s = record(tmp_path, "-p", str(sleeper), "--probe", spec)
    assert_one_line_error(result, 2, message)
    assert took_s < FAST_S, f"{spec}: the error took {took_s:.2f} s"


def test_command_target_fails_before_it_starts(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result, took_s = record(tmp_path, "--probe", "tracepoint:nope:nope", "--", "touch", str(marker))
    assert_one_line_error(result, 2, "no tracepoint nope:nope")
    assert took_s < FAST_S
    assert not marker.exists(), "the command was started"


def test_library_of_a_command_not_yet_started_is_resolved_at_start(tmp_path: Path) -> None:
    """A library named for ``-- COMMAND`` may only be mapped once the command
    runs: it is not judged up front (the broken program's compile error, exit
    5, shows the check let it through), and at start it fails as before."""
    result, _ = record(tmp_path, "--probe", "uprobe:nosuchlib:f", "--", "sleep", "5")
    assert_one_line_error(result, 5, "rejected")
    real = run_bpftop(
        "record", "-d", "1", "-o", str(tmp_path / "y.folded"),
        "--probe", "uprobe:nosuchlib:f", "--", "sleep", "5",
    )  # fmt: skip
    assert_one_line_error(real, 2, "no binary or library 'nosuchlib' is mapped by the target")
