"""Python frames on offcpu and tracepoints, end to end with `bpftop record`
(tests/workloads/py_block.py): off-CPU time splits by Python function, with
whole chains; a tracepoint's hits carry Python frames too; an idle pool thread
is left out unless --idle (tui/model/idle.py)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.bpf.test_python_record import PYTHON, _python_frames, _record
from tests.bpf.test_record import parse_folded
from tests.pythons import ALL, PY311, Interpreter

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_block.py"


def _by_chain(stacks: Counter[tuple[str, ...]]) -> Counter[tuple[str, ...]]:
    """Weights per chain of Python function names (root first)."""
    chains: Counter[tuple[str, ...]] = Counter()
    for stack, weight in stacks.items():
        chains[tuple(name for name, _, _ in _python_frames(stack))] += weight
    return chains


def _record_workload(
    tmp_path: Path, probe: str, mode: str, *extra: str, python: Interpreter = PY311
) -> Counter[tuple[str, ...]]:
    out = tmp_path / f"{mode}.folded"
    command = python.argv(WORKLOAD, mode, "7")
    result = _record("--probe", probe, "-d", "5", "-o", str(out), *extra, "--", *command)
    assert result.returncode == 0, result.stderr
    return parse_folded(out)


@pytest.mark.parametrize("python", ALL, ids=str)
def test_offcpu_time_splits_by_python_function_with_whole_chains(
    python: Interpreter, tmp_path: Path
) -> None:
    """a() sleeps 3x as long as b(): 75% / 25% of the off-CPU time under
    <module> -> main -> run, within 6 points; each keeps its own chain though
    the native stack below them is the same (clock_nanosleep from the eval loop)."""
    chains = _by_chain(_record_workload(tmp_path, "offcpu", "sleep", python=python))
    head = ("<module>", "main", "run")
    a, b = chains[(*head, "a")], chains[(*head, "b")]
    total = sum(chains.values())
    assert total > 2e9, chains  # ns: ~5 s blocked
    assert (a + b) / total >= 0.9, chains
    assert abs(a / (a + b) - 0.75) <= 0.06, chains


@pytest.mark.parametrize("python", ALL, ids=str)
def test_tracepoint_hits_carry_python_frames(python: Interpreter, tmp_path: Path) -> None:
    """write_a() writes 3 times per turn, write_b() once: the hits of
    sys_enter_write split 3:1 by Python function, exactly but for the cut at
    the end of the recording (a turn the recording ends in)."""
    probe = "tracepoint:syscalls:sys_enter_write"
    chains = _by_chain(_record_workload(tmp_path, probe, "write", python=python))
    head = ("<module>", "main", "run")
    a, b = chains[(*head, "write_a")], chains[(*head, "write_b")]
    assert b > 100, chains
    assert 3 * b - 3 <= a <= 3 * b + 3, chains


def test_offcpu_leaves_out_an_idle_pool_thread_unless_idle(tmp_path: Path) -> None:
    """A pool thread waiting in queue.get (innermost Python frame threading's
    Condition.wait) and the main thread blocking in work() (time.sleep), both
    blocked all the time: by default the pool thread's blocks are left out and
    counted on stderr (about half the off-CPU time); with --idle they are in,
    under their whole chain."""
    out = tmp_path / "idle.folded"
    result = _record(
        "--probe", "offcpu", "-d", "5", "-o", str(out), "--", PYTHON, str(WORKLOAD), "idle", "7"
    )
    assert result.returncode == 0, result.stderr
    chains = _by_chain(parse_folded(out))
    work = chains[("<module>", "main", "run", "idle", "work")]
    # The rest: start-up (imports, the thread's start) and preemptions, which
    # offcpu counts too and a loaded machine makes longer (< 10% quiet).
    assert work / sum(chains.values()) >= 0.75, chains
    assert not any("Condition.wait" in chain for chain in chains), chains
    share = re.search(r"left out (\d+) idle Python samples \(([\d.]+)% of the total", result.stderr)
    assert share is not None, result.stderr
    assert int(share[1]) > 20 and 25 <= float(share[2]) <= 75, result.stderr

    kept = _by_chain(_record_workload(tmp_path, "offcpu", "idle", "--idle"))
    pool = ("Thread._bootstrap", "Thread._bootstrap_inner", "Thread.run", "pool_worker")
    waits = kept[(*pool, "Queue.get", "Condition.wait")]
    work = kept[("<module>", "main", "run", "idle", "work")]
    assert 0.25 <= waits / (waits + work) <= 0.75, kept
