"""Python frames from the kernel walker (bpf/python.bpf.c) on Debian's python3.11,
and python3.13 / python3.14 in Debian roots run with chroot (tests/pythons.py).

The workload (tests/workloads/py_split.py) prints each function's code
object address first (``id(code)``), so the kernel's records are checked
against the truth without any naming on our side.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpftop.bpf.program import CpuSampler
from bpftop.bpf.python_walk import MAX_FRAMES
from bpftop.bpf.raw import RawSample
from bpftop.symbols.python.runtime import PythonRefused, PythonRuntime, find_python
from bpftop.tui.collect.python_procs import walker_process
from tests.pythons import ALL, PY311, PY313, PYENV312, PYENV313, Interpreter

WITH_312 = (PY311, PYENV312, *ALL[1:])

PYTHON311 = PY311.binary
WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_split.py"
SAMPLE_HZ = 499  # enough samples in a few seconds for a share within ± 3 points
PYTHON310 = Path.home() / ".pyenv/versions/3.10.13/bin/python3.10"  # a version bpftop refuses


class Workload:
    """A running py_split.py: its process and its functions' code addresses."""

    def __init__(self, python: str | Interpreter, *args: str) -> None:
        if isinstance(python, Interpreter):
            self.proc = python.popen(WORKLOAD, *args, stdout=subprocess.PIPE)
        else:
            self.proc = subprocess.Popen(
                [python, str(WORKLOAD), *args], stdout=subprocess.PIPE, text=True
            )
        assert self.proc.stdout is not None
        self.code: dict[str, int] = json.loads(self.proc.stdout.readline())
        self.name_of = {addr: name for name, addr in self.code.items()}

    def line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def sampler() -> Iterator[CpuSampler]:
    with CpuSampler(SAMPLE_HZ, unwind="auto") as loaded:
        loaded.load()
        loaded.set_targets([])
        loaded.start()
        yield loaded


def _sample(sampler: CpuSampler, workload: Workload, seconds: float) -> list[RawSample]:
    """Describe the workload's interpreter to the walker and sample it."""
    runtime = find_python(workload.proc.pid)
    assert isinstance(runtime, PythonRuntime), runtime
    assert sampler.python is not None and sampler.python.usable
    process = walker_process(runtime)
    assert not isinstance(process, str), process
    sampler.python.describe(workload.proc.pid, process)
    sampler.set_targets([workload.proc.pid])
    sampler.drain()
    samples: list[RawSample] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.5)
        samples += sampler.drain().samples
    sampler.python.forget(workload.proc.pid)
    return samples


def _names(workload: Workload, sample: RawSample) -> list[str]:
    return [workload.name_of.get(code, "?") for code, _, _, _ in sample.python_stack]


def _whole_chain(workload: Workload, sample: RawSample) -> str | None:
    """hot_a / hot_b when the sample's Python stack is whole: the hot function
    (perhaps under burn), then run, main and the module's entry frame."""
    names = _names(workload, sample)
    for hot in ("hot_a", "hot_b"):
        if hot in names:
            at = names.index(hot)
            rest = sample.python_stack[at + 3 :]
            whole = names[at + 1 : at + 3] == ["run", "main"] and len(rest) == 1 and rest[0][2]
            return hot if whole and names[:at] in ([], ["burn"]) else None
    return None


@pytest.mark.parametrize("python", (*WITH_312, PYENV313), ids=str)
def test_split_is_seen_with_whole_python_chains(sampler: CpuSampler, python: Interpreter) -> None:
    workload = Workload(python, "split", "60")
    try:
        samples = _sample(sampler, workload, 6.0)
    finally:
        workload.close()
    total = sum(s.count for s in samples)
    by_hot: collections.Counter[str | None] = collections.Counter()
    for s in samples:
        by_hot[_whole_chain(workload, s)] += s.count
    assert total > 200, f"only {total} samples"
    assert (by_hot["hot_a"] + by_hot["hot_b"]) / total >= 0.95, by_hot
    share_a = 100 * by_hot["hot_a"] / (by_hot["hot_a"] + by_hot["hot_b"])
    assert abs(share_a - 70) <= 3, f"hot_a {share_a:.1f}% of samples (want 70 ± 3)"
    # Instruction indexes are real positions in the code (not 0, not huge).
    indexes = {i for s in samples for _, i, _, _ in s.python_stack}
    assert len(indexes) > 3 and max(indexes) < 1000


@pytest.mark.parametrize("python", (PY313, PYENV313), ids=str)
def test_the_thread_local_thread_state_walks_a_thread_holding_the_gil(
    sampler: CpuSampler, python: Interpreter
) -> None:
    """Without the gilstate key, 3.13+'s thread-local _Py_tss_tstate: in the
    executable's static TLS (Debian) or a shared libpython's block (pyenv,
    through glibc's dtv). A CPU-bound thread holds the GIL: it is set."""
    workload = Workload(python, "split", "60")
    try:
        runtime = find_python(workload.proc.pid)
        assert isinstance(runtime, PythonRuntime) and runtime.tls is not None, runtime
        assert (runtime.tls.module != 0) == (python is PYENV313)
        process = walker_process(dataclasses.replace(runtime, tss_key=0))
        assert not isinstance(process, str) and process.tss_key_addr == 0
        assert sampler.python is not None
        sampler.python.describe(workload.proc.pid, process)
        sampler.set_targets([workload.proc.pid])
        sampler.drain()
        time.sleep(3.0)
        samples = sampler.drain().samples
        sampler.python.forget(workload.proc.pid)
    finally:
        workload.close()
    total = sum(s.count for s in samples)
    whole = sum(s.count for s in samples if _whole_chain(workload, s))
    assert total > 100 and whole / total >= 0.95, (whole, total)


@pytest.mark.parametrize("python", WITH_312, ids=str)
def test_threads_are_attributed_to_their_own_thread(
    sampler: CpuSampler, python: Interpreter
) -> None:
    workload = Workload(python, "threads", "60")
    try:
        left, right = map(int, workload.line().split())
        samples = _sample(sampler, workload, 5.0)
    finally:
        workload.close()
    seen: dict[int, collections.Counter[str]] = {
        left: collections.Counter(),
        right: collections.Counter(),
    }
    for s in samples:
        if s.tid in seen:
            names = _names(workload, s)
            which = {"spin_left", "spin_right"} & set(names)
            seen[s.tid][which.pop() if len(which) == 1 else "other"] += s.count
    for tid, own, other in ((left, "spin_left", "spin_right"), (right, "spin_right", "spin_left")):
        counts = seen[tid]
        assert counts.total() > 50, f"thread {tid}: {counts}"
        assert counts[other] == 0, f"thread {tid} shows the other thread's function: {counts}"
        assert counts[own] / counts.total() >= 0.95, f"thread {tid}: {counts}"


@pytest.mark.parametrize("python", WITH_312, ids=str)
def test_deep_recursion_is_cut_at_the_root_and_counted(
    sampler: CpuSampler, python: Interpreter
) -> None:
    assert sampler.python is not None
    before = sampler.python.counts().truncated
    workload = Workload(python, "deep", "60", "200")
    try:
        samples = _sample(sampler, workload, 4.0)
    finally:
        workload.close()
    total = sum(s.count for s in samples)
    cut = [s for s in samples if s.python_truncated]
    assert total > 100
    assert sum(s.count for s in cut) / total >= 0.95
    for s in cut:
        assert len(s.python_stack) == MAX_FRAMES
        names = _names(workload, s)
        assert "spin_left" in names[:3], names[:3]  # the innermost end is kept
        assert set(names[names.index("spin_left") + 1 :]) == {"recurse"}
    assert sampler.python.counts().truncated - before >= len(cut)


def test_a_process_that_is_not_python_keeps_native_stacks(
    sampler: CpuSampler, workloads: Path
) -> None:
    target = subprocess.Popen([str(workloads / "split"), "30"])
    try:
        assert find_python(target.pid) is None
        sampler.set_targets([target.pid])
        sampler.drain()
        time.sleep(2.0)
        samples = sampler.drain().samples
    finally:
        target.kill()
        target.wait()
    assert sum(s.count for s in samples) > 50
    assert all(not s.python_stack and s.user_stack for s in samples)


def test_an_unverified_python_version_is_refused_in_one_line() -> None:
    if not PYTHON310.exists():
        pytest.fail(f"{PYTHON310} is needed (pyenv's 3.10.13, present on the build machines)")
    workload = Workload(str(PYTHON310), "split", "30")
    try:
        found = find_python(workload.proc.pid)
    finally:
        workload.close()
    assert isinstance(found, PythonRefused)
    assert "3.10.13" in found.message and "\n" not in found.message
    assert "native stacks go on" in found.message


def test_debian_python_is_verified() -> None:
    workload = Workload(PYTHON311, "split", "30")
    try:
        runtime = find_python(workload.proc.pid)
    finally:
        workload.close()
    assert isinstance(runtime, PythonRuntime)
    assert runtime.version.startswith("3.11.") and runtime.path == PYTHON311
    assert runtime.load_bias == 0  # Debian's python3.11 is not PIE
