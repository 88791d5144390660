"""Native frames only, live, for a Python process (the collector's
``show_native_frames``, what ``P`` asks for after Python only): the
interpreter's own frames where the merge put Python frames, as --no-python
shows them; off again, the merged stacks (tests/workloads/py_split.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bpftop.bpf.program import CpuSampler
from bpftop.tui.collect.collector import Collector
from bpftop.tui.model.snapshot import Snapshot
from tests.bpf.test_collector import Watched, tree_labels

PYTHON311 = "/usr/bin/python3.11"
WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_split.py"
EVAL = "_PyEval_EvalFrameDefault"


def _python(snap: Snapshot) -> bool:
    return any(label.startswith("hot_a (") for label in tree_labels(snap.tree))


def test_native_frames_only_and_back_to_merged() -> None:
    target = subprocess.Popen(
        [PYTHON311, str(WORKLOAD), "split", "120"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert target.stdout is not None
        target.stdout.readline()
        collector = Collector(target.pid, CpuSampler(199), interval_s=0.5, early_sampling=False)
        watched = Watched(collector)  # BPF samples only: all with Python frames
        try:
            merged = watched.wait(lambda s: _python(s) and s.tree.total_count > 50, 60)
            watched.collector.show_native_frames(True)
            native = watched.wait(
                lambda s: "native frames" in s.time_mode and s.tree.total_count > 50, 30
            )
            watched.collector.show_native_frames(False)
            again = watched.wait(lambda s: "native" not in s.time_mode and _python(s), 30)
        finally:
            watched.collector.stop()
    finally:
        target.kill()
        target.wait()
    assert EVAL not in tree_labels(merged.tree)
    shown = tree_labels(native.tree)
    assert EVAL in shown and not _python(native), sorted(shown)[:30]
    assert EVAL not in tree_labels(again.tree)
