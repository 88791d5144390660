"""py-spy as the oracle (issue 17's "Must show"): on the same running
python3.11 process, py-spy's top-10 Python functions by self time agree with
bpftop's within 3 points.

tests/workloads/py_mix.py spends its CPU time in six functions (30, 22, 17,
13, 10 and 8% of the loop turns). `py-spy record --format raw` (folded
stacks of ``NAME (FILE:LINE)`` frames, root first, FILE as py-spy shortens
it) and `bpftop record` (folded, the same frames merged with native and
kernel ones) sample it one after the other at the same rate. A function's
self share is the share of samples whose innermost Python frame it is, by
name and file base name (lines ignored): py-spy's stacks hold only Python
frames; bpftop's frames below the innermost Python one are native.
Shares, not counts. py-spy samples in wall time and counts a thread waiting
for a CPU as running; the likely causes of its errors on a loaded machine
are whole preemptions landing on one function and a starved py-spy sampling
in bursts (bpftop samples CPU time, in the kernel). Measured on this 2-core
machine, largest gap per run:
workload and py-spy at nice 0, load ~4: one run of 6 at 4.1 points (py-spy
27.8% for w30, bpftop 31.9%; the workload's share is 30%); workload at nice
-10: 8 of 8 under 3 at load ~4, 2.7 at load ~12; workload alone at nice
-20: gaps of 4.6 to 32.7 in 4 of 5 runs (py-spy 39.0% for
w30, bpftop 30.3%). So the workload and py-spy both run at nice -20 (the
tests run as root): the workload is rarely preempted and py-spy gets a CPU
when it asks (5 of 5 runs under 3 points, largest gap 1.8 at load ~5);
bpftop's shares stayed within 2 points of the workload's in every run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.bpf.test_python_record import _record
from tests.bpf.test_record import parse_folded

PYTHON311 = "/usr/bin/python3.11"
WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_mix.py"
PY_SPY = Path(sys.executable).parent / "py-spy"  # scripts/setup.sh installs it (dev extra)
SAMPLE_HZ, SECONDS = 499, 8
NICE = "-20"  # see the module's docstring
TOLERANCE_POINTS = 3.0
# A frame of either tool: NAME (FILE:LINE); py-spy's FILE may be shortened.
FRAME = re.compile(r"^(?P<name>.+) \((?P<file>[^()]+):(?P<line>\d+)\)$")
Function = tuple[str, str]  # name, file base name


def _innermost(stack: tuple[str, ...]) -> Function | None:
    for frame in reversed(stack):
        found = FRAME.match(frame)
        if found:
            return found["name"], os.path.basename(found["file"])
    return None


def self_shares(stacks: Counter[tuple[str, ...]]) -> tuple[dict[Function, float], int]:
    """Each Python function's self share (%) of the samples with Python frames,
    and their number."""
    own: Counter[Function] = Counter()
    for stack, count in stacks.items():
        function = _innermost(stack)
        if function is not None:
            own[function] += count
    total = own.total()
    return {f: 100 * c / max(1, total) for f, c in own.items()}, total


def top(shares: dict[Function, float], n: int = 10) -> list[Function]:
    return sorted(shares, key=lambda f: -shares[f])[:n]


def _py_spy(pid: int, out: Path) -> subprocess.CompletedProcess[str]:
    command = ["nice", "-n", NICE, str(PY_SPY), "record", "-p", str(pid), "-r", str(SAMPLE_HZ)]
    command += ["-d", str(SECONDS)]
    return subprocess.run(
        [*command, "--format", "raw", "-o", str(out)], capture_output=True, text=True, timeout=120
    )


def test_top_functions_by_self_time_agree_with_py_spy(tmp_path: Path) -> None:
    assert PY_SPY.exists(), f"{PY_SPY} is missing: scripts/setup.sh installs py-spy"
    target = subprocess.Popen(
        ["nice", "-n", NICE, PYTHON311, str(WORKLOAD), "120"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert target.stdout is not None and target.stdout.readline().strip() == "ready"
        spied = _py_spy(target.pid, tmp_path / "py-spy.txt")
        assert spied.returncode == 0, spied.stderr
        recorded = _record(
            "-p", str(target.pid), "--no-early", "-F", str(SAMPLE_HZ), "-d", str(SECONDS),
            "-o", str(tmp_path / "bpftop.folded"),
        )  # fmt: skip
        assert recorded.returncode == 0, recorded.stderr
    finally:
        target.kill()
        target.wait()
    oracle, oracle_total = self_shares(parse_folded(tmp_path / "py-spy.txt"))
    seen, seen_total = self_shares(parse_folded(tmp_path / "bpftop.folded"))
    assert oracle_total > 600 and seen_total > 600, (oracle_total, seen_total)
    workers = {(f"w{n}", WORKLOAD.name) for n in (30, 22, 17, 13, 10, 8)}
    assert workers <= set(top(oracle, 6)), f"py-spy's top functions: {top(oracle)}"
    report = "\n".join(
        f"  {name} ({file}): py-spy {oracle.get((name, file), 0):.1f}%, "
        f"bpftop {seen.get((name, file), 0):.1f}%"
        for name, file in dict.fromkeys(top(oracle) + top(seen))
    )
    for function in dict.fromkeys(top(oracle) + top(seen)):
        gap = abs(oracle.get(function, 0.0) - seen.get(function, 0.0))
        assert gap <= TOLERANCE_POINTS, f"{function} differs by {gap:.1f} points:\n{report}"
