"""CPython 3.13 and 3.14 end to end: `bpftop record -p PID` of Debian's
interpreters in their own roots (chroot: files read through /proc/PID/root
and map_files, the kernel's thread ids), beside py-spy on the same process
in the same run (tests/workloads/py_split.py's 70/30 split).

bpftop samples CPU time in the kernel; py-spy samples in wall time and
counts a thread waiting for a CPU as running, so both run at nice -20 with
the workload (see tests/bpf/test_python_pyspy.py for what load does to it).
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from bpftop.bpf.resolve import mapped_files
from tests.bpf.test_python_pyspy import NICE, PY_SPY
from tests.bpf.test_python_record import PY_FRAME, _python_frames, _record
from tests.bpf.test_record import parse_folded
from tests.pythons import PY313, PY314, Interpreter

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_split.py"
SAMPLE_HZ, SECONDS = 499, 8
Stacks = Counter[tuple[str, ...]]


def _split(stacks: Stacks, file: str) -> tuple[float, float, float, int]:
    """hot_a's share of hot_a + hot_b; the share of samples with the whole
    chain <module>; main; run; hot_*; the share whose Python frames sit
    inside the native stack (after libc's start, as merged at the eval loop,
    not appended at the root end); the total."""
    total = sum(stacks.values())
    hot: Counter[str] = Counter()
    whole = inside = 0
    for stack, count in stacks.items():
        names = [name for name, f, _ in _python_frames(stack) if f == file]
        for func in ("hot_a", "hot_b"):
            if func in names:
                hot[func] += count
                whole += count if names[: names.index(func)] == ["<module>", "main", "run"] else 0
        first = next((i for i, f in enumerate(stack) if f.startswith("<module> (")), -1)
        if first > 0 and "__libc_start_main" in stack[:first]:
            inside += count
    share_a = 100 * hot["hot_a"] / max(1, hot["hot_a"] + hot["hot_b"])
    return share_a, whole / max(1, total), inside / max(1, total), total


@pytest.mark.parametrize("python", [PY313, PY314], ids=str)
def test_record_pid_splits_70_30_beside_py_spy(python: Interpreter, tmp_path: Path) -> None:
    assert PY_SPY.exists(), f"{PY_SPY} is missing: scripts/setup.sh installs py-spy"
    target = subprocess.Popen(
        ["nice", "-n", NICE, *python.argv(WORKLOAD, "split", "120")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert target.stdout is not None
        target.stdout.readline()
        spy_command = [
            "nice", "-n", NICE, str(PY_SPY), "record", "-p", str(target.pid),
            "-r", str(SAMPLE_HZ), "-d", str(SECONDS + 4), "--format", "raw",
            "-o", str(tmp_path / "py-spy.txt"),
        ]  # fmt: skip
        spy = subprocess.Popen(
            spy_command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        out = tmp_path / "bpftop.folded"
        # --no-early: perf_event samples from before BPF loads have no Python frames.
        result = _record(
            "-p", str(target.pid), "--no-early", "-F", str(SAMPLE_HZ), "-d", str(SECONDS),
            "-o", str(out),
        )  # fmt: skip
        _, spy_err = spy.communicate(timeout=60)
    finally:
        target.kill()
        target.wait()
    assert result.returncode == 0, result.stderr
    assert spy.returncode == 0, spy_err
    assert "bpftop: warning" not in result.stderr, result.stderr
    file = python.path(WORKLOAD)  # the file name the target sees
    share_a, whole, inside, total = _split(parse_folded(out), file)
    # py-spy names files by their base name.
    spy_a, _, _, spy_total = _split(parse_folded(tmp_path / "py-spy.txt"), WORKLOAD.name)
    note = (
        f"{python}: bpftop hot_a {share_a:.1f}% ({total} samples, {whole:.1%} whole chains), "
        f"py-spy {spy_a:.1f}% ({spy_total} samples)"
    )
    print(note)
    assert total > 800 and spy_total > 400, note
    assert whole >= 0.95, note
    assert inside >= 0.95, f"Python frames not merged at the eval loop: {inside:.1%}"
    assert abs(share_a - 70) <= 3, note
    assert abs(share_a - spy_a) <= 3, note
    # Lines: a hot_* frame that calls burn is at its call (instr_ptr of a
    # calling frame); one sampled as the leaf is in its own two lines (the
    # def line is RESUME's; the call's before burn's frame is pushed).
    source = WORKLOAD.read_text().splitlines()
    calling: set[tuple[str, int]] = set()
    leaf: set[tuple[str, int]] = set()
    for stack in parse_folded(out):
        frames = [(name, line) for name, f, line in _python_frames(stack) if f == file]
        for i, (name, line) in enumerate(frames):
            if name in ("hot_a", "hot_b"):
                (calling if frames[i + 1 :] else leaf).add((name, line))
    assert {name for name, _ in calling} == {"hot_a", "hot_b"}, calling
    assert all("burn(" in source[line - 1] for _, line in calling), calling
    call = dict(calling)
    assert all(line in (call[name] - 1, call[name]) for name, line in leaf), leaf


@pytest.mark.parametrize("python", [PY313, PY314], ids=str)
def test_perf_trampolines_neither_double_nor_cut_the_python_frames(
    python: Interpreter, tmp_path: Path
) -> None:
    """`python -X perf` runs each Python frame through a trampoline in
    anonymous memory, named py::FUNC:FILE in /tmp/perf-PID.map (in the
    target's root). The walk goes through them (their rule is read from their
    code) to libc's start, and the merged stacks name each Python frame once."""
    target = subprocess.Popen(
        python.argv(WORKLOAD, "split", "120", options=("-X", "perf")),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert target.stdout is not None
        target.stdout.readline()
        perf_map = (python.root or Path("/")) / f"tmp/perf-{target.pid}.map"
        out = tmp_path / "bpftop.folded"
        result = _record(
            "-p", str(target.pid), "--no-early", "-F", str(SAMPLE_HZ), "-d", "4", "-o", str(out)
        )
    finally:
        target.kill()
        target.wait()
        map_text = perf_map.read_text() if perf_map.exists() else ""
        perf_map.unlink(missing_ok=True)
    assert result.returncode == 0, result.stderr
    assert "py::burn:" in map_text, "the interpreter wrote no trampolines: -X perf not in force?"
    stacks = parse_folded(out)
    file = python.path(WORKLOAD)
    share_a, whole, inside, total = _split(stacks, file)
    doubled = sum(c for s, c in stacks.items() if any(f.startswith("py::") for f in s))
    chains = Counter[tuple[str, ...]]()
    for stack, count in stacks.items():
        chains[tuple(name for name, f, _ in _python_frames(stack) if f == file)] += count
    once = sum(c for chain, c in chains.items() if len(set(chain)) == len(chain))
    note = f"{python} -X perf: {total} samples, {whole:.1%} whole, {inside:.1%} inside, {chains}"
    assert total > 300, note
    assert doubled == 0, f"{doubled} samples keep trampoline frames: {note}"
    assert once == total, note
    assert whole >= 0.95, note
    assert inside >= 0.95, f"the walk stopped at a trampoline: {note}"
    assert abs(share_a - 70) <= 3, note


@pytest.mark.parametrize("python", [PY313, PY314], ids=str)
def test_uprobes_by_library_name_land_in_the_roots_own_files(
    python: Interpreter, tmp_path: Path
) -> None:
    """`uprobe:c:clock_gettime` and `uprobe:python3.X:PyFloat_FromDouble` on
    an interpreter run with chroot: /proc/PID/maps shows bpftop the root's
    files with the root's folder in front; the probe goes on those files (not
    the host's libc, not the folder twice) and its hits carry the Python chain
    (`burn` calls `time.thread_time`, which calls both). A path copied from
    the maps (the root's folder in front) names the same libc."""
    target = python.popen(WORKLOAD, "split", "60", stdout=subprocess.PIPE)
    try:
        assert target.stdout is not None
        target.stdout.readline()
        found: dict[str, Counter[tuple[str, ...]]] = {}
        libc = next(p for p in mapped_files(target.pid) if p.endswith("/libc.so.6"))
        assert python.root is not None and libc.startswith(f"{python.root}/"), libc
        specs = ("c:clock_gettime", f"python{python.version}:PyFloat_FromDouble")
        for spec in (*specs, f"{libc}:clock_gettime"):  # a path copied from the maps
            out = tmp_path / f"{len(found)}.folded"
            result = _record(
                "-p", str(target.pid), "--probe", f"uprobe:{spec}", "-d", "1", "-o", str(out)
            )
            assert result.returncode == 0, result.stderr
            found[spec] = parse_folded(out)
    finally:
        target.kill()
        target.wait()
    file = python.path(WORKLOAD)
    for spec, stacks in found.items():
        total = sum(stacks.values())
        in_burn = sum(
            c
            for s, c in stacks.items()
            if [n for n, f, _ in _python_frames(s) if f == file][-1:] == ["burn"]
        )
        assert total > 1_000 and in_burn >= 0.95 * total, (
            spec,
            in_burn,
            total,
            stacks.most_common(2),
        )
    for spec in ("c:clock_gettime", f"{libc}:clock_gettime"):
        assert all(s[-1] == "clock_gettime" for s in found[spec]), "the probed leaf"


@pytest.mark.parametrize("python", [PY313, PY314], ids=str)
def test_a_command_launched_through_chroot_gets_python_frames_from_its_second_image(
    python: Interpreter, tmp_path: Path
) -> None:
    """`bpftop record --children -- chroot ROOT python3.X script`: the command
    is held at its first exec (chroot) and again at the next one (the
    interpreter), so the interpreter is found and described before its first
    instruction; it exits during the recording, and the samples of its last
    second still get their Python frames (merged, even where its code objects
    could no longer be named)."""
    out = tmp_path / "launch.folded"
    result = _record("--children", "-F", str(SAMPLE_HZ), "-o", str(out), "--",
                     *python.argv(WORKLOAD, "split", "3"), timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr
    stacks = parse_folded(out)
    total = sum(stacks.values())
    merged = sum(c for s, c in stacks.items() if any(_is_python(f) for f in s))
    unmerged = sum(c for s, c in stacks.items() if any("_PyEval_EvalFrameDefault" in f for f in s))
    note = f"{python}: {merged} of {total} with Python frames, {unmerged} show the eval loop"
    print(note)
    assert total > 200, note
    assert merged >= 0.9 * total, note  # (the interpreter's start-up has no Python frames)
    assert unmerged <= 0.02 * total, note


def _is_python(frame: str) -> bool:
    """A Python frame, named (QUALNAME (FILE:LINE)) or not ([python]+0x...: its
    code object was read too late)."""
    return bool(PY_FRAME.match(frame)) or frame.startswith("[python]+0x")


@pytest.mark.parametrize("python", [PY313, PY314], ids=str)
def test_a_uprobe_by_name_follows_a_launched_command_into_its_root(
    python: Interpreter, tmp_path: Path
) -> None:
    """`--probe uprobe:c:clock_gettime -- chroot ROOT python3.X script`: `c`
    is first the host's libc (chroot's); held at the interpreter's exec, the
    probe moves to the root's libc, which the interpreter calls."""
    out = tmp_path / "follow.folded"
    result = _record("--probe", "uprobe:c:clock_gettime", "-o", str(out), "--",
                     *python.argv(WORKLOAD, "split", "2"), timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr
    stacks = parse_folded(out)
    total = sum(stacks.values())
    file = python.path(WORKLOAD)
    in_burn = sum(c for s, c in stacks.items() if ("burn", file) in _names(s))
    assert total > 1_000 and in_burn >= 0.95 * total, (in_burn, total, stacks.most_common(2))
    other = {s: c for s, c in stacks.items() if s[-1] != "clock_gettime"}
    # (A hit in the interpreter's first milliseconds may come before the
    # symbolizer, which read its maps at the exec, reads them again with libc.)
    assert sum(other.values()) <= 0.001 * total, f"the probed function is the leaf: {other}"


def _names(stack: tuple[str, ...]) -> set[tuple[str, str]]:
    return {(name, f) for name, f, _ in _python_frames(stack)}
