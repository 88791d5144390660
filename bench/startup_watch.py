"""The measuring tools of bench.startup: run a profiler command and watch it,
read the start-up workload's clock, and read the profiles both tools write.

A profiler command runs under :func:`watch`: its CPU time (/proc/PID/stat,
all threads, clock ticks) is polled every 10 ms into a timeline, and the
whole command's CPU and peak RSS come from ``wait4`` (the command and every
descendant it waited for). Profiles are reduced to the sample count and the
smallest ``fn_XXX`` index of the start-up workload (tests/workloads/startup.c).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import WORKLOADS

STARTUP = WORKLOADS / "startup"
PERF = "perf"  # Debian's linux-perf puts its wrapper on PATH, as the other benches use it
FN = re.compile(r"(?<![\w.])fn_([0-9a-f]{3})(?![\w.])")
POLL_S = 0.01
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Clock:
    """The workload's own start (CLOCK_MONOTONIC, as time.monotonic()) and pace."""

    start_s: float
    period_s: float
    count: int

    def middle_of(self, index: int) -> float:
        """When function ``index`` of the first pass was running (its middle)."""
        return self.start_s + (index + 0.5) * self.period_s

    @staticmethod
    def wait_for(path: Path, timeout_s: float = 10.0) -> Clock:
        """The clock the workload writes to ``path`` when it starts."""
        deadline = time.monotonic() + timeout_s
        while not path.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the start-up workload never wrote {path}")
            time.sleep(0.001)
        start, period, count = path.read_text().split()
        return Clock(float(start), float(period), int(count))


@dataclass(frozen=True)
class Profile:
    """What a profile says: its samples and the earliest and latest workload
    functions in it (indices of the first pass)."""

    samples: int
    earliest: int | None
    latest: int | None = None
    named: int = 0  # samples with a workload function among their frames


@dataclass(frozen=True)
class Watched:
    """One profiler command: when it ended, what it cost, how it ended."""

    launched_s: float  # time.monotonic() right before the spawn
    ended_s: float  # when wait4 reaped it (the output file is written by then)
    cpu_s: float  # user + system of the command and its reaped descendants
    peak_rss_kib: int  # ru_maxrss: the largest process of the tree
    timeline: tuple[tuple[float, float], ...]  # (monotonic s, CPU s) while it ran
    status: int  # exit code, or -signal
    stderr: str

    def cpu_at(self, when_s: float) -> float:
        """The command's CPU time at ``when_s`` (the last poll before it)."""
        before = [cpu for t, cpu in self.timeline if t <= when_s]
        return before[-1] if before else 0.0


def spawn_workload(args: Sequence[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(STARTUP), *args], stdin=subprocess.DEVNULL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def reap_cpu_s(proc: subprocess.Popen[bytes]) -> float:
    """Reap ``proc`` (killed if it still runs) and return its user + system CPU
    (wait4; ``proc`` must not have been waited for)."""
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if not pid:
        proc.kill()
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return float(usage.ru_utime + usage.ru_stime)


def watch(
    argv: Sequence[str],
    stderr_path: Path,
    timeout_s: float,
) -> Watched:
    """Run ``argv`` to its end (SIGINT after ``timeout_s``, SIGKILL 30 s later)."""
    with stderr_path.open("wb") as err:
        launched = time.monotonic()
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        timeline, status, usage = _follow(proc, launched, timeout_s)
    except BaseException:  # Ctrl-C: leave no profiler behind (nor what it started)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    ended = time.monotonic()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Watched(
        launched_s=launched,
        ended_s=ended,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_kib=usage.ru_maxrss,
        timeline=tuple(timeline),
        status=proc.returncode,
        stderr=stderr_path.read_text(errors="replace").strip(),
    )


def _follow(
    proc: subprocess.Popen[bytes], launched: float, timeout_s: float
) -> tuple[list[tuple[float, float]], int, Any]:
    """Poll ``proc``'s CPU until it ends: (timeline, wait status, rusage)."""
    timeline: list[tuple[float, float]] = []
    interrupted = False
    while True:
        now = time.monotonic()
        cpu = process_cpu_s(proc.pid)
        if cpu is not None:
            timeline.append((now, cpu))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return timeline, status, usage
        if not interrupted and now - launched > timeout_s:
            proc.send_signal(signal.SIGINT)
            interrupted = True
        elif now - launched > timeout_s + 30:
            proc.kill()
        time.sleep(POLL_S)


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU of a live process, all its threads and its reaped
    children (clock-tick resolution)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return sum(int(f) for f in fields[11:15]) * TICK_S  # utime, stime, cutime, cstime


def threads_cpu_s(pid: int) -> float:
    """CPU of a process's live threads from schedstat (ns resolution)."""
    total_ns = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total_ns += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total_ns / 1e9


def sampling(pid: int) -> bool:
    """Has ``pid`` opened a perf event (bpftop's sampler, perf's counters)?"""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    return any("perf_event" in link for link in links)


def read_folded(path: Path) -> Profile:
    """bpftop's folded output: ``frame;frame;... COUNT`` lines."""
    samples, named, seen = 0, 0, set[int]()
    if not path.exists():
        return Profile(0, None)
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        samples += int(count)
        found = {int(m.group(1), 16) for m in FN.finditer(stack)}
        named += int(count) if found else 0
        seen |= found
    return _profile(samples, named, seen)


def read_perf(data: Path) -> tuple[Profile, float]:
    """perf.data through ``perf script``: (the profile, seconds perf script took)."""
    if not data.exists():
        return Profile(0, None), 0.0
    started = time.monotonic()
    out = subprocess.run(
        [PERF, "script", "-i", str(data), "-F", "pid,ip,sym"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    took = time.monotonic() - started
    samples, named, seen = 0, 0, set[int]()
    counted = True  # whether the current sample has been counted as named
    for line in out.splitlines():
        if line.strip().isdigit():
            samples += 1  # a sample's header line (its pid); its frames follow
            counted = False
        elif found := {int(m.group(1), 16) for m in FN.finditer(line)}:
            named += 0 if counted else 1
            counted = True
            seen |= found
    return _profile(samples, named, seen), took


def _profile(samples: int, named: int, seen: set[int]) -> Profile:
    return Profile(samples, min(seen, default=None), max(seen, default=None), named)
