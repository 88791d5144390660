"""When a profiled process counts as exited (real processes, no BPF needed)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.collect.process_watch import ProcessWatch, any_thread_alive
from bpftop.tui.collect.targets import Followed, ProcessLabels

NO_SAMPLER: Any = None  # alive() never touches the sampler


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _wait(condition: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_process_whose_main_thread_exited_first_lives_on(workloads: Path) -> None:
    """`exits leader`: the main thread exits at once (a zombie leader) while two
    threads spin for 1.5 s: the process is alive until they end."""
    proc = subprocess.Popen(
        [str(workloads / "exits"), "leader", "1.5", "2"], stdout=subprocess.DEVNULL
    )
    try:
        watch = ProcessWatch(proc.pid)
        _wait(lambda: _state(proc.pid) == "Z")  # the leader is gone, its threads are not
        assert any_thread_alive(proc.pid)
        assert not watch.exited()
        _wait(lambda: not any_thread_alive(proc.pid))
        assert watch.exited() and watch.gone
    finally:
        proc.kill()
        proc.wait()
    assert not any_thread_alive(proc.pid), "a reaped process has no threads"


def test_a_followed_process_lives_while_any_of_its_threads_does(workloads: Path) -> None:
    """A process followed beside the main target (-p -p, --children) whose main
    thread exits first keeps the run going until its last thread ends."""
    proc = subprocess.Popen(
        [str(workloads / "exits"), "leader", "1.5", "2"], stdout=subprocess.DEVNULL
    )
    try:
        followed = Followed([proc.pid], Symbolizer(), NO_SAMPLER, ProcessLabels())
        _wait(lambda: _state(proc.pid) == "Z")
        assert followed.alive(), "its threads still run"
        _wait(lambda: not any_thread_alive(proc.pid))
        assert not followed.alive()
    finally:
        proc.kill()
        proc.wait()
