"""A probe that cannot be attached is reported before the BPF compile.

Each case runs ``bpftop record`` with a program that cannot compile
(BPFTOP_BPF_SOURCE): had the compile run first, the exit code would be 5
(BpfLoadError), so exit code 2 with the probe's own one-line error proves the
check came before it. The time bound is the user's view of the same thing:
bpftop's own CPU time (user + system, from the child's rusage), which the
other work on a shared 2-core VM cannot inflate the way it inflates wall
time; the compile alone takes more than that.
"""

from __future__ import annotations

import resource
import subprocess
import time
from pathlib import Path

import pytest

from bpftop.bpf.resolve import kprobes_available
from bpftop.tui.collect.collector import PROBE_WAIT_S
from tests.cli.test_errors import assert_one_line_error, run_bpftop

FAST_S = 1.5  # CPU s: bpftop starts and fails in ~0.5 s; the compile alone takes 2.2 s or more
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
    """``bpftop record ARGS`` with a program that cannot compile; and its CPU seconds."""
    broken = tmp_path / "broken.bpf.c"
    broken.write_text("this is not C\n")
    return cpu_timed(
        "record", "-d", "1", "-o", str(tmp_path / "x.folded"), *args,
        env={"BPFTOP_BPF_SOURCE": str(broken)},
    )  # fmt: skip


def cpu_timed(*args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run_bpftop(*args, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return result, cpu_s


@pytest.mark.parametrize(("spec", "message"), CASES)
def test_probe_error_comes_before_the_compile(
    sleeper: int, tmp_path: Path, spec: str, message: str
) -> None:
    result, took_s = record(tmp_path, "-p", str(sleeper), "--probe", spec)
    assert_one_line_error(result, 2, message)
    assert took_s < FAST_S, f"{spec}: the error took {took_s:.2f} s of CPU"


def test_command_target_fails_before_it_starts(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result, took_s = record(tmp_path, "--probe", "tracepoint:nope:nope", "--", "touch", str(marker))
    assert_one_line_error(result, 2, "no tracepoint nope:nope")
    assert took_s < FAST_S
    assert not marker.exists(), "the command was started"


def test_library_of_a_command_not_yet_started_is_resolved_at_start(tmp_path: Path) -> None:
    """A library named for ``-- COMMAND`` may only be mapped once the command
    runs: it is not judged up front (the broken program's compile error, exit
    5, shows the check let it through); found in none of the command's
    images, it fails once the command has run on without another exec."""
    result, _ = record(tmp_path, "--probe", "uprobe:nosuchlib:f", "--", "sleep", "5")
    assert_one_line_error(result, 5, "rejected")
    real = run_bpftop(
        "record", "-d", "1", "-o", str(tmp_path / "y.folded"),
        "--probe", "uprobe:nosuchlib:f", "--", "sleep", "5",
    )  # fmt: skip
    assert_one_line_error(real, 2, "no binary or library 'nosuchlib' is mapped by the target")


def test_live_view_fails_before_the_compile(sleeper: int, tmp_path: Path) -> None:
    broken = tmp_path / "broken.bpf.c"
    broken.write_text("this is not C\n")
    result, took_s = cpu_timed(
        "-p", str(sleeper), "--probe", "tracepoint:nope:nope",
        env={"BPFTOP_BPF_SOURCE": str(broken)},
    )  # fmt: skip
    assert_one_line_error(result, 2, "no tracepoint nope:nope")
    assert took_s < FAST_S


def test_a_path_the_command_may_see_after_its_exec_fails_once_it_runs_without_it(
    tmp_path: Path,
) -> None:
    """A path this root does not have, for ``-- COMMAND``: the command may
    chroot (the path as it will see it), so it is not judged up front (exit 5
    from the broken program). Found in none of the command's images, it fails
    with its one line once the command has run PROBE_WAIT_S without another
    exec: not when the command ends (a minute later), nor with it left running."""
    spec = "uprobe:/nonexistent/lib.so:f"
    result, _ = record(tmp_path, "--probe", spec, "--", "sleep", "60")
    assert_one_line_error(result, 5, "rejected")
    started = time.monotonic()
    real = run_bpftop("record", "-o", str(tmp_path / "y.folded"), "--probe", spec,
                      "--", "sleep", "60", timeout=50)  # fmt: skip
    assert_one_line_error(real, 2, "no file /nonexistent/lib.so (give an existing path")
    took_s = time.monotonic() - started
    assert PROBE_WAIT_S <= took_s < 40, f"{took_s:.1f} s"  # (the compile: seconds)
