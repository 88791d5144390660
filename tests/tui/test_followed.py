"""Followed processes and thread names, without the kernel: ``Followed``
decides when the run is over (the last followed process gone, zombies too)
and sorts a tick's new tasks; ``ThreadNames`` names threads of every process."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

from bpftop.bpf.raw import ExitEvent, RawSample, RawTick
from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.collect.targets import Followed, ProcessLabels
from bpftop.tui.collect.thread_names import ThreadNames


class Targets:
    """The sampler's target list, as far as ``Followed`` touches it."""

    def __init__(self) -> None:
        self.removed: list[int] = []

    def remove_target(self, pid: int) -> None:
        self.removed.append(pid)


def test_the_run_goes_on_until_the_last_followed_process_is_gone() -> None:
    first = subprocess.Popen(["sleep", "60"])
    second = subprocess.Popen(["sleep", "60"])
    try:
        followed = Followed([first.pid], Symbolizer(), Targets(), ProcessLabels())  # type: ignore[arg-type]
        followed.note_forks(RawTick(forks=(second.pid,), fork_parents=(os.getpid(),)))
        assert followed.alive()
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert followed.alive(), "the forked one still runs"
        second.send_signal(signal.SIGKILL)
        os.waitid(os.P_PID, second.pid, os.WEXITED | os.WNOWAIT)  # a zombie, not reaped
        assert not followed.alive(), "a zombie does not run"
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()


def test_new_tasks_are_sorted_into_processes_threads_and_gone_children() -> None:
    done = threading.Event()
    worker = threading.Thread(target=done.wait)
    worker.start()
    gone = subprocess.Popen(["true"])
    gone.wait()
    live = subprocess.Popen(["sleep", "60"])
    try:
        tid = worker.native_id
        assert tid is not None
        targets, labels, symbolizer = Targets(), ProcessLabels(), Symbolizer()
        symbolizer.prepare(os.getpid())
        followed = Followed([], symbolizer, targets, labels)  # type: ignore[arg-type]
        parent = os.getpid()
        tick = RawTick(forks=(tid, gone.pid, live.pid), fork_parents=(parent, parent, parent))
        followed.note_forks(tick)
        assert targets.removed == [tid, gone.pid], "threads and gone tasks leave the targets"
        assert followed.alive() and symbolizer.process(live.pid) is not None
        assert labels.name(gone.pid) == labels.name(parent), "named like its parent"
        assert symbolizer.prepare(gone.pid).maps is not None, "its parent's maps"
        live.kill()
        live.wait()
        assert not followed.alive() and targets.removed[-1] == gone.pid, "untargeted later"
        followed.note_forks(RawTick(forks=(gone.pid,), fork_parents=(parent,)))
        assert targets.removed[-2:] == [live.pid, gone.pid], "on the next forks"
    finally:
        done.set()
        worker.join()
        live.kill()
        live.wait()


def test_an_execd_child_is_not_named_from_its_parent() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    symbolizer = Symbolizer()
    symbolizer.prepare(os.getpid())
    followed = Followed([], symbolizer, Targets(), ProcessLabels())  # type: ignore[arg-type]
    tick = RawTick(execs=(gone.pid,), forks=(gone.pid,), fork_parents=(os.getpid(),))
    followed.note_forks(tick)
    assert symbolizer.prepare(gone.pid).maps is None, "another image than the parent's"


def _comm(root: Path, tgid: int, tid: int, name: str) -> None:
    task = root / str(tgid) / "task" / str(tid)
    task.mkdir(parents=True)
    (task / "comm").write_text(name + "\n")


def test_threads_of_every_process_are_named_and_repeats_told_apart(tmp_path: Path) -> None:
    _comm(tmp_path, 10, 10, "server")
    _comm(tmp_path, 10, 11, "worker")
    _comm(tmp_path, 20, 21, "worker")
    _comm(tmp_path, 20, 22, "io")
    names = ThreadNames(str(tmp_path))
    samples = tuple(RawSample(tgid, tid, (), (), 1) for tgid, tid in [(10, 10), (10, 11), (20, 21)])
    names.note(RawTick(samples=samples))
    assert names.names == {10: "server", 11: "worker 10:11", 21: "worker 20:21"}
    assert (names.processes, names.threads) == (2, 3)
    gone = RawTick(
        samples=(RawSample(20, 22, (), (), 1), RawSample(30, 31, (), (), 1)),
        exits=(ExitEvent(30, 31, "short"),),
    )
    names.note(gone)
    assert names.names[22] == "io" and names.names[31] == "short", "an exit names a gone thread"
    names.note(RawTick(exits=(ExitEvent(20, 22, "io-renamed"),)))
    assert names.names[22] == "io-renamed", "the name at exit is the last one"
    assert (names.processes, names.threads) == (3, 5)
