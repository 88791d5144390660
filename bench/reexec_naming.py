"""A process that execs again and again: named samples, bpftop beside perf.

Runs ``reexec N MS`` (N+1 images of MS ms of CPU each, image K burning in
``image_{K%4}_burn``) twice: launched by bpftop (``record -- reexec``, perf
attached by pid while bpftop holds the command), and waiting on stdin while
``bpftop record -p`` and ``perf record -g -p`` attach, then started. Both tools
record the same run at 99 Hz; prints per tool the share of samples named (no
``[unknown]`` frame), the share that reach ``main`` and each burner's share:

    sudo flock /tmp/bench.lock .venv/bin/python -m bench.reexec_naming
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.runtimes import BPFTOP, WORKLOADS, folded, perf_stacks

Stacks = Counter[tuple[str, ...]]
BURNERS = tuple(f"image_{k}_burn" for k in range(4))


def named(stack: tuple[str, ...]) -> bool:
    return "[unknown]" not in stack


def report(tool: str, stacks: Stacks) -> str:
    total = sum(stacks.values()) or 1
    good = sum(n for s, n in stacks.items() if named(s))
    shares = []
    for burner in BURNERS:
        n = sum(c for s, c in stacks.items() if burner in s)
        shares.append(f"{burner[6]}:{100 * n / total:.0f}%")
    in_main = sum(n for s, n in stacks.items() if "main" in s)
    return (
        f"  {tool:6} {100 * good / total:5.1f}% of {total} named, {100 * in_main / total:5.1f}%"
        f" reach main; burners {' '.join(shares)}"
    )


def _perf(pid: int, data: Path) -> subprocess.Popen[bytes]:
    perf = subprocess.Popen(
        ["perf", "record", "-q", "-F", "99", "-g", "-p", str(pid), "-o", str(data)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(0.5)  # attached
    return perf


def _stop(perf: subprocess.Popen[bytes]) -> None:
    if perf.poll() is None:
        perf.send_signal(2)
    perf.wait()


def launched(images: int, ms: int, tmp: Path) -> tuple[Stacks, Stacks]:
    """``bpftop record -- reexec``; perf attached by pid during bpftop's hold."""
    out, data = tmp / "launch.folded", tmp / "launch.data"
    bpftop = subprocess.Popen(
        [str(BPFTOP), "record", "-o", str(out), "--", str(WORKLOADS / "reexec"),
         str(images - 1), str(ms)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    pid = 0
    while not pid and bpftop.poll() is None:
        found = subprocess.run(["pgrep", "-P", str(bpftop.pid)], capture_output=True, text=True)
        pid = int(found.stdout.split()[0]) if found.stdout.split() else 0
        time.sleep(0.005)
    perf = _perf(pid, data) if pid else None
    bpftop.wait()
    if perf is not None:
        _stop(perf)
    return folded(out), perf_stacks(data)


def attached(images: int, ms: int, tmp: Path) -> tuple[Stacks, Stacks]:
    """``reexec`` waiting on stdin; ``record -p`` and ``perf -p`` attach, then it runs."""
    out, data = tmp / "pid.folded", tmp / "pid.data"
    target = subprocess.Popen(
        [str(WORKLOADS / "reexec"), str(images - 1), str(ms)],
        stdin=subprocess.PIPE, env={**os.environ, "REEXEC_WAIT": "1"},
    )  # fmt: skip
    assert target.stdin is not None
    bpftop = subprocess.Popen(
        [str(BPFTOP), "record", "-p", str(target.pid), "-o", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    perf = _perf(target.pid, data)
    time.sleep(12)  # bpftop's first sample comes well before (no compile: a cached program)
    target.stdin.write(b"x")
    target.stdin.close()
    target.wait()
    bpftop.wait()
    _stop(perf)
    return folded(out), perf_stacks(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="4x750,60x50", help="IMAGESxMS,...")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for run in args.runs.split(","):
            images, ms = (int(v) for v in run.split("x"))
            for mode, record in (("record --", launched), ("record -p", attached)):
                ours, perfs = record(images, ms, tmp)
                print(f"{images} images of {ms} ms, {mode}")
                print(report("bpftop", ours))
                print(report("perf", perfs))


if __name__ == "__main__":
    main()
