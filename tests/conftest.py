"""Shared fixtures: paths to the built workloads, the bpftop command, a process to target."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpftop.base import crash_log
from bpftop.tui.collect.collector import COLLECTOR_THREAD

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "build" / "workloads"
BPFTOP = Path(sys.executable).parent / "bpftop"


@pytest.fixture(scope="session")
def workloads() -> Path:
    """The C workloads, (re)built by make (scripts/setup.sh builds them too)."""
    subprocess.run(
        ["make", "-s", "-C", str(ROOT / "tests" / "workloads"), f"OUT={WORKLOADS}"], check=True
    )
    return WORKLOADS


@pytest.fixture
def sleeper() -> Iterator[int]:
    """The pid of a process that sleeps for a minute (a target that exists)."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


def sampling(pid: int) -> bool:
    """Has process ``pid`` attached a perf event (bpftop's sampler is running)?"""
    fds = Path(f"/proc/{pid}/fd")
    try:
        entries = list(fds.iterdir())
    except OSError:
        return False  # gone
    for fd in entries:
        try:  # (an fd closed since the listing is no answer: the others are)
            if "perf_event" in str(fd.readlink()):
                return True
        except OSError:
            continue
    return False


def collecting(pid: int) -> bool:
    """Has bpftop ``pid`` checked its arguments and started its collector? (perf_event
    sampling, and the thread that empties its rings, start before the checks; the
    collector's thread, named so, after them.)"""
    try:
        names = [
            (task / "comm").read_text().strip() for task in Path(f"/proc/{pid}/task").iterdir()
        ]
        return sampling(pid) and COLLECTOR_THREAD in names
    except OSError:
        return False


@pytest.fixture(autouse=True)
def _fresh_crash_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no internal errors logged in this process (the
    Diagnostics view lists them, so one test's errors would show in another's)."""
    monkeypatch.setattr(crash_log, "_written", [])
