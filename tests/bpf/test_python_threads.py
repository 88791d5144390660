"""Python thread names end to end: the live collector names a CPython
process's threads as ``threading`` does (tests/workloads/py_threads.py), and
each named thread's samples are its own function's: Debian's 3.11, and 3.13
and 3.14 in their roots (chroot)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bpftop.bpf.program import CpuSampler
from bpftop.tui.collect.collector import Collector
from tests.bpf.test_collector import Watched, tree_labels
from tests.pythons import ALL, Interpreter

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_threads.py"


@pytest.mark.parametrize("python", ALL, ids=str)
def test_live_threads_carry_their_threading_names(python: Interpreter) -> None:
    target = python.popen(WORKLOAD, "120", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert target.stdout is not None
        ids: dict[str, int] = json.loads(target.stdout.readline())
        collector = Collector(target.pid, CpuSampler(199), interval_s=0.5, early_sampling=False)
        watched = Watched(collector)  # BPF samples only: all with Python frames
        try:
            named = watched.wait(
                lambda s: {"worker-a", "worker-b"} <= {t.name for t in s.threads}, 60
            )
            by_name = {t.name: t for t in named.threads}
            assert by_name["worker-a"].tid == ids["worker-a"]
            assert by_name["worker-b"].tid == ids["worker-b"]
            watched.collector.select_thread(ids["worker-a"])
            alone = watched.wait(lambda s: "thread" in s.time_mode and s.tree.total_count > 50, 30)
        finally:
            watched.collector.stop()
    finally:
        target.kill()
        target.wait()
    names = tree_labels(alone.tree)
    assert any(n.startswith("spin_a (") for n in names), sorted(names)[:20]
    assert not any(n.startswith("spin_b (") for n in names)
