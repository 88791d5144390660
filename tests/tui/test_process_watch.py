"""When a profiled process counts as exited (real processes, no BPF needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.collect.process_watch import (
    ProcessWatch,
    any_thread_alive,
    live_children,
    wake_at_exit,
)
from bpftop.tui.collect.targets import Followed, ProcessLabels, held_command, launch_held

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


def test_a_held_command_is_named_as_the_user_gave_it_not_as_its_shell() -> None:
    proc = launch_held(["sleep", "30", "it's quoted"])
    try:
        assert held_command(proc) == ["sleep", "30", "it's quoted"]
        info = ProcessWatch(proc.pid, held_command(proc)).info()
        assert info.name == "sleep" and info.cmdline == "sleep 30 'it'\"'\"'s quoted'"
        assert "kill -STOP" not in info.cmdline
        assert "kill -STOP" in ProcessWatch(proc.pid).info().cmdline, "the shell holds it"
    finally:
        proc.kill()
        proc.wait()
    assert held_command(None) == []


def test_children_not_followed_are_counted_while_they_run() -> None:
    parent = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        _wait(lambda: live_children(parent.pid) == 2)
        assert ProcessWatch(parent.pid, count_children=True).info().children == 2
        assert ProcessWatch(parent.pid).info().children == 0, "followed: nothing to suggest"
    finally:
        for pid in Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split():
            os.kill(int(pid), signal.SIGKILL)
        parent.kill()
        parent.wait()


def test_wake_at_exit_wakes_when_the_process_ends_and_its_thread_ends_with_it() -> None:
    child = subprocess.Popen(["/bin/sleep", "0.3"])
    woken, stop = threading.Event(), threading.Event()
    started = time.monotonic()
    wake_at_exit(child.pid, woken.set, stop)
    assert not woken.wait(0.1), "woken while the process runs"
    assert woken.wait(5), "never woken"
    assert time.monotonic() - started < 1.0, "woken at the exit, not at a poll"
    child.wait()
    watchers = [t for t in threading.enumerate() if t.name == f"bpftop-exit-{child.pid}"]
    for thread in watchers:
        thread.join(2)
    assert not any(t.is_alive() for t in watchers)


def test_wake_at_exit_of_a_process_that_lives_on_ends_at_stop() -> None:
    woken, stop = threading.Event(), threading.Event()
    wake_at_exit(os.getpid(), woken.set, stop)
    (watcher,) = [t for t in threading.enumerate() if t.name == f"bpftop-exit-{os.getpid()}"]
    stop.set()
    watcher.join(3)
    assert not watcher.is_alive() and not woken.is_set()


def test_a_gone_process_is_labelled_by_its_name_read_at_exec_else_its_parents() -> None:
    child = subprocess.Popen(["/bin/true"])
    child.wait()
    names = {child.pid: "sed"}
    labels = ProcessLabels(names.get)
    assert labels.name(child.pid) == "sed"  # gone, read at its exec
    other = ProcessLabels()
    other.adopt(child.pid, os.getpid())
    assert other.name(child.pid) == Path("/proc/self/comm").read_text().strip()
    assert ProcessLabels().name(child.pid) == f"pid {child.pid}"
