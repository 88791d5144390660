"""Python frames named and merged into native stacks, end to end: `bpftop
record -p PID`, `bpftop record -- python3 script.py` and the live collector on
Debian's python3.11 (tests/workloads/py_split.py)."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from bpftop.bpf.program import CpuSampler
from bpftop.symbols.python.code import is_python_frame
from bpftop.tui.collect.collector import Collector
from bpftop.tui.formats.profile_io import read_saved
from bpftop.tui.model.snapshot import Snapshot
from bpftop.tui.model.viewstate import ViewState
from tests.bpf.test_collector import Watched
from tests.bpf.test_python_record import PY_FRAME, PYTHON, WORKLOAD, _python_frames, _record
from tests.bpf.test_record import parse_folded
from tests.exports.consumers import go_pprof_raw
from tests.pythons import ALL, PY311, PYENV312, Interpreter


def _split_shares(
    stacks: Counter[tuple[str, ...]], file: str = str(WORKLOAD)
) -> tuple[float, float, int]:
    """hot_a's share of hot_a + hot_b, the share of samples with the whole chain
    (<module>; main; run; hot_*), and the total."""
    total = sum(stacks.values())
    hot: Counter[str] = Counter()
    whole = 0
    for stack, count in stacks.items():
        names = [name for name, f, _ in _python_frames(stack) if f == file]
        for func in ("hot_a", "hot_b"):
            if func in names:
                hot[func] += count
                at = names.index(func)
                whole += count if names[:at] == ["<module>", "main", "run"] else 0
    share_a = 100 * hot["hot_a"] / max(1, hot["hot_a"] + hot["hot_b"])
    return share_a, whole / max(1, total), total


def test_record_pid_splits_70_30_with_python_frames(tmp_path: Path) -> None:
    target = subprocess.Popen(
        [PYTHON, str(WORKLOAD), "split", "120"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert target.stdout is not None
        target.stdout.readline()
        out = tmp_path / "split.folded"
        # --no-early: perf_event samples from before BPF loads have no Python frames.
        result = _record(
            "-p", str(target.pid), "--no-early", "-F", "499", "-d", "8", "-o", str(out)
        )
        assert result.returncode == 0, result.stderr
    finally:
        target.kill()
        target.wait()
    share_a, whole, total = _split_shares(parse_folded(out))
    assert total > 800, f"{total} samples"
    assert abs(share_a - 70) <= 3, f"hot_a {share_a:.1f}% (want 70 ± 3)"
    assert whole >= 0.95, f"only {whole:.1%} of samples carry <module>;main;run;hot_*"
    assert "bpftop: warning" not in result.stderr


def test_record_command_shows_merged_python_and_native_frames(tmp_path: Path) -> None:
    """Recorded to pprof: Go's pprof sees Python functions (hot_a, hot_b) with
    their file, bpftop reads back the frames as ``QUALNAME (FILE:LINE)``."""
    out = tmp_path / "cmd.pb.gz"
    result = _record(
        "-F", "499", "-o", str(out), "--", PYTHON, str(WORKLOAD), "split", "6", timeout=180
    )
    assert result.returncode == 0, result.stderr
    stacks = Counter[tuple[str, ...]]()
    for stack in read_saved(out).stacks:
        stacks[(stack.thread, *(f.name for f in stack.frames))] += stack.count
    share_a, whole, total = _split_shares(stacks)
    assert total > 500 and abs(share_a - 70) <= 5 and whole >= 0.9, (share_a, whole, total)
    by_function, _ = go_pprof_raw(out)
    hot = {f: sum(c for s, c in by_function.items() if f in s) for f in ("hot_a", "hot_b")}
    assert abs(100 * hot["hot_a"] / (hot["hot_a"] + hot["hot_b"]) - share_a) < 0.01, hot
    # Merged: native frames stay around the Python ones (the process, libc's
    # start and the C function time.thread_time calls), the eval loop is gone.
    sample = max(
        (s for s in stacks if any(n == "burn" for n, _, _ in _python_frames(s))),
        key=stacks.__getitem__,
    )
    burn = next(i for i, f in enumerate(sample) if f.startswith("burn ("))
    assert any("clock_gettime" in f or "thread_time" in f for f in sample[burn + 1 :]), sample
    # The eval loop is replaced wherever the thread had Python frames (a few
    # samples of start-up and shutdown C code may not).
    unmerged = sum(c for s, c in stacks.items() if any("_PyEval_EvalFrameDefault" in f for f in s))
    assert unmerged <= 0.02 * total, f"{unmerged} of {total} samples show the eval loop"
    lines = {line for name, _, line in _python_frames(sample) if name in ("hot_a", "hot_b")}
    source = WORKLOAD.read_text().splitlines()
    assert all("burn(" in source[line - 1] for line in lines), lines


def test_live_collector_shows_each_threads_python_function(tmp_path: Path) -> None:
    """The live views render the collector's snapshots: the same named frames,
    and picking one thread shows only its own Python function."""
    target = subprocess.Popen(
        [PYTHON, str(WORKLOAD), "threads", "120"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert target.stdout is not None
        target.stdout.readline()
        left, right = map(int, target.stdout.readline().split())
        watched = Watched(Collector(target.pid, CpuSampler(199), interval_s=1.0))
        try:
            both = watched.wait(
                lambda s: {"spin_left", "spin_right"} <= _hot_names(s) and s.tree.total_count > 200,
                60,
            )
            assert {left, right} <= {t.tid for t in both.threads}
            # Diagnostics' counts are read at BPF's first tick, then every 5 s.
            watched.wait(lambda s: s.python is not None and s.python.walked > 0, 15)
            watched.collector.select_thread(left)
            one = watched.wait(lambda s: s.time_mode.endswith(f"thread {left}"), 10)
        finally:
            watched.collector.stop()
    finally:
        target.kill()
        target.wait()
    names = _hot_names(one)
    assert "spin_left" in names and "spin_right" not in names, names
    state = ViewState()  # P: the Python frames alone, py-spy's view, by function
    state.toggle_frames("python")
    python_only = state.derive(both.tree, both.hot).hot
    assert all(is_python_frame(h.label, h.module) for h in python_only), python_only[:5]
    assert any(not is_python_frame(h.label, h.module) for h in both.hot)  # native ones went
    by_function = {h.label: h for h in python_only}
    assert f"spin_left ({WORKLOAD})" in by_function and f"spin_right ({WORKLOAD})" in by_function
    assert not [label for label in by_function if PY_FRAME.match(label)]  # no line shown
    state.toggle_python_functions()  # G: by line
    by_line = state.derive(both.tree, both.hot).hot
    assert {"spin_left", "spin_right"} <= {m["name"] for h in by_line
                                            if (m := PY_FRAME.match(h.label))}  # fmt: skip
    lines = sum(h.total_count for h in by_line if h.label.startswith("spin_left ("))
    assert by_function[f"spin_left ({WORKLOAD})"].total_count == lines > 0  # not recursive


def _hot_names(snap: Snapshot) -> set[str]:
    """Python function names among the snapshot's hot functions (any total)."""
    found = (PY_FRAME.match(h.label) for h in snap.hot if h.total_count)
    return {m["name"] for m in found if m}


def test_record_of_a_200_deep_recursion_keeps_the_innermost_frames_and_marks_the_cut(
    tmp_path: Path,
) -> None:
    target = subprocess.Popen(
        [PYTHON, str(WORKLOAD), "deep", "120", "200"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert target.stdout is not None
        target.stdout.readline()
        out = tmp_path / "deep.folded"
        result = _record("-p", str(target.pid), "--no-early", "-d", "4", "-o", str(out))
        assert result.returncode == 0, result.stderr
    finally:
        target.kill()
        target.wait()
    stacks = parse_folded(out)
    total = sum(stacks.values())
    cut = {s: c for s, c in stacks.items() if any(f.startswith("[Python frames cut") for f in s)}
    assert total > 100 and sum(cut.values()) >= 0.95 * total, (sum(cut.values()), total)
    for stack in cut:
        names = [name for name, _, _ in _python_frames(stack)]
        assert "spin_left" in names and "main" not in names, names  # root end cut
        marker = next(i for i, f in enumerate(stack) if f.startswith("[Python frames cut"))
        assert _python_frames(stack[marker + 1 : marker + 2]), "the cut sits above the kept frames"


@pytest.mark.parametrize("python", ALL, ids=str)
def test_multiprocessing_children_have_python_frames_from_their_first_samples(
    python: Interpreter, tmp_path: Path
) -> None:
    """``--children``: the kernel gives a forked child its parent's interpreter
    entry, so its samples carry Python frames before user space has looked at
    the child (without it, 18-37% of samples showed the bare eval loop). The
    children stay alive past the recording: a child that exits before its
    code objects are read leaves unnamed Python frames (see docs/python.md).
    The bodies of the modules the parent imports at start-up are not counted
    as unnamed: their code objects are freed once run (3.13's and 3.14's
    imports make up about 3% of the samples)."""
    out = tmp_path / "children.folded"
    result = _record("--children", "-F", "199", "-d", "4", "-o", str(out), "--",
                     *python.argv(WORKLOAD, "children", "3"), timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr
    stacks = parse_folded(out)
    total = sum(stacks.values())

    def samples_in(name: str) -> int:
        return sum(c for s, c in stacks.items() if any(f.startswith(f"{name} (") for f in s))

    left, right = samples_in("spin_left"), samples_in("spin_right")
    assert right >= 2 * left > 0, (left, right)  # two children for 3 s, the parent for 1.5 s
    unnamed = sum(c for s, c in stacks.items() if _unnamed_python(s, imports=False))
    imported = sum(c for s, c in stacks.items() if _unnamed_python(s, imports=True))
    note = f"{unnamed} of {total} samples have unnamed Python frames ({imported} in imports)"
    assert unnamed <= 0.03 * total, note
    unmerged = sum(c for s, c in stacks.items() if any("_PyEval_EvalFrameDefault" in f for f in s))
    # Without the kernel's copy 37% (92 of 248); with it 0% alone, up to 6.5% in a
    # loaded suite run (samples before user space had read a child's interpreter).
    assert unmerged <= 0.12 * total, f"{unmerged} of {total} samples show the eval loop"


# What runs a module's body on import (a frozen module's too): the body's code
# object is freed once it has run, often before bpftop reads it.
IMPORT_RUNNERS = ("_call_with_frames_removed (", "FrozenImporter.exec_module (")


def _unnamed_python(stack: tuple[str, ...], imports: bool) -> bool:
    """Whether ``stack`` has an unnamed Python frame (``[python]+0x...``) that
    is (``imports``) or is not the body of a module being imported: right
    under the import machinery's runner, or under such an unnamed frame."""
    in_import = False
    for below, frame in zip(("", *stack), stack, strict=False):
        if not frame.startswith("[python]"):
            continue
        in_import = below.startswith(IMPORT_RUNNERS) or (below.startswith("[python]") and in_import)
        if in_import == imports:
            return True
    return False


def test_uprobe_hits_under_python_code_carry_the_python_chain(
    tmp_path: Path, python: Interpreter = PY311
) -> None:
    """``uprobe:c:clock_gettime`` on the split workload (``time.thread_time``
    calls it from ``burn``): each hit is named from the Python functions that
    led to it, the kprobe-type copy of the Python walker at work."""
    out = tmp_path / "uprobe.folded"
    result = _record("--probe", "uprobe:c:clock_gettime", "-d", "3", "-o", str(out), "--",
                     *python.argv(WORKLOAD, "split", "6"), timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr
    stacks = parse_folded(out)
    total = sum(stacks.values())
    with_python = sum(c for s, c in stacks.items() if _python_frames(s))
    assert total > 1_000 and with_python >= 0.95 * total, (with_python, total)
    share_a, whole, _ = _split_shares(stacks, python.path(WORKLOAD))
    assert abs(share_a - 70) <= 5 and whole >= 0.9, (share_a, whole)
    assert all(s[-1] == "clock_gettime" for s in stacks), "the probed function is the leaf"


@pytest.mark.parametrize("python", (*ALL, PYENV312), ids=str)
def test_gil_keeps_only_the_samples_of_threads_holding_the_gil(
    python: Interpreter, tmp_path: Path
) -> None:
    """Two threads on CPU: ``spin_left`` runs Python code (it holds the GIL),
    ``hash_right`` hashes 1 MiB blocks, which hashlib does without the GIL.
    Both are sampled; with ``--gil`` only ``spin_left`` is, as py-spy's --gil."""
    shares = {}
    for flag in ("", "--gil"):
        out = tmp_path / f"gil{flag}.folded"
        result = _record(*filter(None, [flag]), "-F", "199", "-d", "3", "-o", str(out), "--",
                         *python.argv(WORKLOAD, "gil", "6"), timeout=180)  # fmt: skip
        assert result.returncode == 0, result.stderr
        stacks = parse_folded(out)
        left = sum(c for s, c in stacks.items() if any(f.startswith("spin_left (") for f in s))
        right = sum(c for s, c in stacks.items() if any(f.startswith("hash_right (") for f in s))
        assert left > 50, (flag, left, right)
        shares[flag] = right / (left + right)
    # hash_right waits for the GIL between blocks (spin_left holds it): 18-35% of
    # the two threads' samples without --gil, under 1% with it.
    assert shares[""] >= 0.1 and shares["--gil"] <= 0.03, shares
