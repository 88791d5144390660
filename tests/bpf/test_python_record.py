"""Python frames end to end (`bpftop record`, the live collector): what bpftop
does with a Python it cannot verify and with a process that is not Python
(tests/workloads/py_split.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from bpftop.bpf.program import CpuSampler
from bpftop.tui.collect.collector import Collector
from bpftop.tui.model.snapshot import Phase
from tests.bpf.test_collector import Watched
from tests.bpf.test_record import parse_folded
from tests.conftest import BPFTOP

PYTHON = "/usr/bin/python3"  # Debian 12's: 3.11
WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_split.py"
PYTHON310 = Path.home() / ".pyenv/versions/3.10.13/bin/python3.10"  # a version bpftop refuses
# QUALNAME (FILE:LINE), py-spy's form
PY_SPLIT_NAMES = {"<module>", "main", "run", "hot_a", "hot_b", "burn"}  # split mode's functions
PY_FRAME = re.compile(r"^(?P<name>.+) \((?P<file>[^():]+):(?P<line>\d+)\)$")


def _record(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BPFTOP), "record", *args], capture_output=True, text=True, timeout=timeout
    )


def _python_frames(stack: tuple[str, ...]) -> list[tuple[str, str, int]]:
    found = (PY_FRAME.match(frame) for frame in stack)
    return [(m["name"], m["file"], int(m["line"])) for m in found if m]


def test_record_unverified_python_says_one_line_and_keeps_native_stacks(
    tmp_path: Path,
) -> None:
    assert PYTHON310.exists(), f"{PYTHON310} is needed (pyenv's 3.10.13 on the build machines)"
    target = subprocess.Popen(
        [str(PYTHON310), str(WORKLOAD), "split", "120"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert target.stdout is not None
        target.stdout.readline()
        out = tmp_path / "310.folded"
        result = _record("-p", str(target.pid), "-d", "4", "-o", str(out))
    finally:
        target.kill()
        target.wait()
    assert result.returncode == 0, result.stderr
    warnings = [
        line for line in result.stderr.splitlines() if "3.10.13" in line
    ]  # its path (3.10 has no Py_Version)
    assert len(warnings) == 1, result.stderr
    assert "native stacks go on" in warnings[0]
    stacks = parse_folded(out)
    total = sum(stacks.values())
    assert total > 100
    assert not any(_python_frames(s) for s in stacks)
    with_user_frames = sum(c for s, c in stacks.items() if len(s) >= 3)
    assert with_user_frames / total >= 0.9, "native stacks go on"


def test_record_of_a_native_process_has_no_python_frames_and_no_warning(
    workloads: Path, tmp_path: Path
) -> None:
    target = subprocess.Popen([str(workloads / "split"), "60"])
    try:
        out = tmp_path / "native.folded"
        result = _record("-p", str(target.pid), "-d", "3", "-o", str(out))
    finally:
        target.kill()
        target.wait()
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
    stacks = parse_folded(out)
    assert sum(stacks.values()) > 100 and not any(_python_frames(s) for s in stacks)
    assert any("hot_a" in s for s in stacks)


def test_live_header_names_an_unverified_python_once() -> None:
    assert PYTHON310.exists(), f"{PYTHON310} is needed (pyenv's 3.10.13 on the build machines)"
    target = subprocess.Popen(
        [str(PYTHON310), str(WORKLOAD), "split", "120"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert target.stdout is not None
        target.stdout.readline()
        watched = Watched(Collector(target.pid, CpuSampler(99), interval_s=0.5))
        try:
            snap = watched.wait(lambda s: "3.10.13" in s.message and s.tree.total_count > 50, 60)
        finally:
            watched.collector.stop()
    finally:
        target.kill()
        target.wait()
    assert snap.message.count("3.10.13") == 1, snap.message
    assert "native stacks go on" in snap.message


def test_a_python_killed_mid_walk_keeps_its_named_frames() -> None:
    """The interpreter dies (SIGKILL) while the kernel walks it: collection
    ends by itself and says so; what was named stays named, a frame whose code
    object could no longer be read is unnamed (never wrong), native stacks go on."""
    target = subprocess.Popen([PYTHON, str(WORKLOAD), "split", "120"], stdout=subprocess.PIPE)
    try:
        assert target.stdout is not None
        target.stdout.readline()
        watched = Watched(Collector(target.pid, CpuSampler(99), interval_s=0.5))
        try:
            watched.wait(lambda s: s.python is not None and s.python.walked >= 200, 120)
            target.kill()
            last = watched.wait(lambda s: s.phase is Phase.EXITED, 60)
        finally:
            watched.collector.stop()
    finally:
        target.kill()
        target.wait()
    assert f"process {target.pid} exited" in last.message
    python = [(h, PY_FRAME.match(h.label)) for h in last.hot if h.module.endswith(".py")]
    assert python and all(m and m["name"] in PY_SPLIT_NAMES for h, m in python), python
    under = sum(h.total_count for h, m in python if m and m["name"] in ("hot_a", "hot_b"))
    assert last.python is not None and under >= 0.8 * last.python.walked, (under, last.python)
