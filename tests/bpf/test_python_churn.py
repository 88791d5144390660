"""Freed code objects never give a wrong name (issue 17's "Must show"), end to
end with `bpftop record -p PID` on Debian's python3.11, python3.13 and
python3.14 (tests/pythons.py).

tests/workloads/py_churn.py keeps compiling new functions ``gen_N`` from
files ``<gen-N>``, runs each for BUSY_MS of CPU time and frees it KEEP
functions later; the next ones are made at the freed addresses (the
workload counts the distinct addresses) with the same first line and shape.
Every Python frame named ``gen_N (FILE:LINE)`` must have FILE ``<gen-N>``
and LINE in gen_N's lines; no gen_N may carry more samples than its
BUSY_MS of CPU time allows, nor may the gens seen carry more on average.
bpftop before this test (names cached by address, checked by type pointer
and first line only, read a drain after the sample) failed both runs
(/work/main's bpftop driven by these helpers): freed at once, all 1,902
named samples went to one name, ``gen_588``; kept 400 functions, 1,190
samples went to 401 names (one per address), 2.97 per name.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.bpf.test_python_record import PY_FRAME, _python_frames, _record
from tests.bpf.test_record import parse_folded
from tests.pythons import ALL, PY311, Interpreter

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_churn.py"
LINES = 6  # py_churn.py's SOURCE: gen_N spans lines 1..6 of <gen-N>
SAMPLE_HZ, BUSY_MS = 499, 4
PER_GEN = BUSY_MS * SAMPLE_HZ / 1000  # samples one gen_N's CPU time takes, on average
# At most, with room for a timer firing late; a name served from a stale
# entry gets the samples of every later function at its address.
MAX_PER_GEN = 6
KEPT = 400  # seconds of life: longer than a drain, and reused in a 6 s record
GEN = re.compile(r"^gen_(\d+)$")


def _churn(
    keep: int, out: Path, python: Interpreter = PY311
) -> tuple[dict[str, int], subprocess.CompletedProcess[str]]:
    """Record the churning workload for a few seconds; its summary, and the record."""
    target = python.popen(
        WORKLOAD, "300", str(BUSY_MS), str(keep), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert target.stdout is not None and target.stdin is not None
        assert target.stdout.readline().strip() == "ready"
        result = _record(
            "-p", str(target.pid), "--no-early", "-F", str(SAMPLE_HZ), "-d", "6", "-o", str(out)
        )
        target.stdin.close()  # the workload stops and prints its summary
        summary: dict[str, int] = json.loads(target.stdout.readline())
        target.wait(timeout=30)
    finally:
        target.kill()
        target.wait()
    return summary, result


def _gen_samples(stacks: Counter[tuple[str, ...]]) -> tuple[Counter[int], list[str]]:
    """Samples per gen_N (its innermost gen frame), and every frame whose name,
    file and line do not belong together."""
    per_gen: Counter[int] = Counter()
    wrong: list[str] = []
    for stack, count in stacks.items():
        gens = [(m, f, line) for m, f, line in _python_frames(stack) if GEN.match(m)]
        for name, file, line in gens:
            n = int(name[4:])
            if file != f"<gen-{n}>" or not 1 <= line <= LINES:
                wrong.append(f"{name} ({file}:{line})")
        if gens:
            per_gen[int(gens[0][0][4:])] += count
    return per_gen, wrong


@pytest.mark.parametrize("python", ALL, ids=str)
@pytest.mark.parametrize("keep", [KEPT, 0], ids=["kept-seconds", "freed-at-once"])
def test_freed_code_objects_never_get_a_wrong_name(
    keep: int, python: Interpreter, tmp_path: Path
) -> None:
    out = tmp_path / "churn.folded"
    summary, result = _churn(keep, out, python)
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    assert summary["addresses"] * 2 < summary["gens"], f"addresses were not reused: {summary}"
    stacks = parse_folded(out)
    total = sum(stacks.values())
    per_gen, wrong = _gen_samples(stacks)
    assert total > 500, f"{total} samples"
    assert not wrong, f"{len(wrong)} frames named wrongly, e.g. {wrong[:5]}"
    crowded = {n: c for n, c in per_gen.items() if c > MAX_PER_GEN}
    assert not crowded, f"gen_N with more samples than its CPU time allows: {crowded}"
    assert all(n < summary["gens"] for n in per_gen)
    named = per_gen.total() / total
    if keep:  # each lives seconds, longer than a drain: named while alive
        assert named >= 0.7, f"only {named:.1%} of samples name a gen_ function"
        mean = per_gen.total() / len(per_gen)
        assert mean <= 1.3 * PER_GEN, f"{mean:.2f} samples per gen_N seen (want {PER_GEN:.1f})"
    else:  # freed milliseconds after it ran: mostly unnamed by the drain, never misnamed
        unnamed = sum(c for s, c in stacks.items() if any(f.startswith("[python]") for f in s))
        assert (unnamed + per_gen.total()) / total >= 0.7, f"{unnamed} unnamed of {total}"
    assert all(PY_FRAME.match(f) or not f.startswith("gen_") for s in stacks for f in s)
