"""Thread names from a live CPython's ``threading`` (symbols/python/threads.py,
tui/collect/thread_names.py), on tests/workloads/py_threads.py: Debian's 3.11
on the host, 3.13 and 3.14 in their roots (chroot), one of them in a pid
namespace of its own (unshare), where Python's thread ids are not the kernel's."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpftop.bpf.raw import RawSample, RawTick
from bpftop.symbols.python.runtime import PythonRuntime, find_python
from bpftop.symbols.python.threads import PythonThreadNames
from bpftop.tui.collect.thread_names import PYTHON_READ_S, ThreadNames
from tests.pythons import ALL, PY311, PY313, PY314, PYENV312, Interpreter

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_threads.py"


class Threads:
    """A running py_threads.py and the thread ids it reported."""

    def __init__(self, python: Interpreter = PY311, wrap: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [*wrap, *python.argv(WORKLOAD, "60")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.ids = self.report()
        self.pid = self.proc.pid if not wrap else _only_child(self.proc.pid)
        runtime = find_python(self.pid)
        assert isinstance(runtime, PythonRuntime), runtime
        self.runtime = runtime

    def report(self) -> dict[str, int]:
        assert self.proc.stdout is not None
        found: dict[str, int] = json.loads(self.proc.stdout.readline())
        return found

    def start(self, name: str) -> dict[str, int]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        self.ids = self.report()
        return self.ids

    def tick(self, *names: str) -> RawTick:
        pid = self.pid
        return RawTick(samples=tuple(RawSample(pid, self.ids[n], (), (), 1) for n in names))


def _only_child(pid: int) -> int:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


@pytest.fixture
def threads() -> Iterator[Threads]:
    workload = Threads()
    yield workload
    workload.proc.kill()
    workload.proc.wait()


@pytest.mark.parametrize("python", [*ALL, PYENV312], ids=str)
def test_named_threads_are_read_by_native_id(python: Interpreter) -> None:
    threads = Threads(python)
    try:
        found = PythonThreadNames(threads.runtime).read()
    finally:
        threads.proc.kill()
        threads.proc.wait()
    assert isinstance(found, dict), found
    wanted = {tid: name for name, tid in threads.ids.items()}
    assert found == wanted  # worker-b's attributes are in its own dict, worker-a's are not
    assert {"MainThread", "worker-a", "worker-b"} <= set(found.values())


@pytest.mark.parametrize("python", [PY313, PY314], ids=str)
def test_in_a_pid_namespace_names_go_to_the_kernels_thread_ids(python: Interpreter) -> None:
    """unshare --pid: Python's native ids are the namespace's (1, 2, ...); the
    names are keyed by the kernel's ids, the ones samples carry."""
    threads = Threads(python, wrap=("unshare", "--pid", "--fork"))
    try:
        found = PythonThreadNames(threads.runtime).read()
        kernel = {int(t) for t in os.listdir(f"/proc/{threads.pid}/task")}
    finally:
        threads.proc.kill()
        threads.proc.wait()
    assert threads.ids["MainThread"] == 1, threads.ids  # the namespace's first process
    assert isinstance(found, dict), found
    assert set(found) <= kernel and threads.pid in found, (found, kernel)
    assert found[threads.pid] == "MainThread"
    assert sorted(found.values()) == sorted(threads.ids), (found, threads.ids)


@pytest.mark.parametrize("python", ALL, ids=str)
def test_a_process_without_threading_gives_a_reason(python: Interpreter) -> None:
    code = "import sys, time; print(flush=True); time.sleep(60)"
    argv = python.argv(WORKLOAD)[:-1]  # the interpreter (in its root), without the script
    proc = subprocess.Popen([*argv, "-I", "-S", "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        runtime = find_python(proc.pid)
        assert isinstance(runtime, PythonRuntime), runtime
        found = PythonThreadNames(runtime).read()
    finally:
        proc.kill()
        proc.wait()
    assert found == "threading not imported"


def test_wrong_type_pointers_read_no_names(threads: Threads) -> None:
    types = threads.runtime.types
    wrong = type(types)(types.str_type, types.dict_type, types.int_type, types.module_type)
    runtime = dataclasses.replace(threads.runtime, types=wrong)
    assert isinstance(PythonThreadNames(runtime).read(), str)


def test_thread_names_use_python_names_and_reread_new_threads_rate_limited(
    threads: Threads,
) -> None:
    now = [100.0]
    names = ThreadNames(python_of=lambda _: threads.runtime, clock=lambda: now[0])
    names.note(threads.tick("MainThread", "worker-a", "worker-b"))
    ids = threads.ids
    assert names.names[ids["worker-a"]] == "worker-a"
    assert names.names[ids["worker-b"]] == "worker-b"
    assert names.names[ids["MainThread"]] == "MainThread"
    late = threads.start("late-c")["late-c"]
    now[0] += PYTHON_READ_S / 2
    names.note(threads.tick("late-c"))
    assert names.names[late] == "python3.11", "read again only after PYTHON_READ_S"
    now[0] += PYTHON_READ_S
    names.note(RawTick())
    assert names.names[late] == "late-c", "a new thread's process is read at a later tick"


def test_an_exec_forgets_python_names(threads: Threads) -> None:
    names = ThreadNames(python_of=lambda _: threads.runtime)
    names.note(threads.tick("worker-a"))
    assert names.names[threads.ids["worker-a"]] == "worker-a"
    names._python_of = lambda _: None  # the new image is no Python
    names.note(RawTick(execs=(threads.pid,)))
    assert names.names[threads.ids["worker-a"]] == "python3.11"
