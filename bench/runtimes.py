"""Rust, Go and LLD-linked C stacks: bpftop beside ``perf --call-graph dwarf``.

Starts each target, lets it get busy, then runs ``bpftop record`` (default
flags) and ``perf record --call-graph dwarf`` on it at the same time for the
same seconds, and prints per tool the share of samples whose stack reaches
the target's main (Go: the share naming the frameless leaf's caller, and
hotA's part of those, 2:1 = 66.7%):

    sudo flock /tmp/bench.lock .venv/bin/python -m bench.runtimes
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "build" / "workloads"
BPFTOP = ROOT / ".venv" / "bin" / "bpftop"
# target -> the frame a whole stack holds
TARGETS = {"rshot": "rshot::main", "chain_nofp_lld": "main", "goshot": "main.run"}
GO_CALLERS = ("main.hotA", "main.hotB")

Stacks = Counter[tuple[str, ...]]


def folded(path: Path) -> Stacks:
    stacks: Stacks = Counter()
    for line in path.read_text().splitlines():
        frames, _, count = line.rpartition(" ")
        stacks[tuple(frames.split(";"))] += int(count)
    return stacks


def perf_stacks(data: Path) -> Stacks:
    """Root-first stacks of ``perf script`` (its inline frames dropped)."""
    text = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "ip,sym"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    stacks: Stacks = Counter()
    for block in text.split("\n\n"):
        frames = [line.split(None, 1) for line in block.strip().splitlines()]
        names = [f[1].strip() for f in frames if len(f) == 2 and "(inlined)" not in f[1]]
        if names:
            stacks[tuple(reversed(names))] += 1
    return stacks


def report(tool: str, stacks: Stacks, wanted: str) -> str:
    total = sum(stacks.values()) or 1
    whole = sum(n for s, n in stacks.items() if any(f.startswith(wanted) for f in s))
    line = f"  {tool:6} {100 * whole / total:5.1f}% of {total} reach {wanted}"
    if wanted == "main.run":
        callers = Counter[str]()
        for stack, n in stacks.items():
            for caller in GO_CALLERS:
                if any(f.startswith(caller) for f in stack):
                    callers[caller] += n
        named = sum(callers.values())
        line += f"; callers named {100 * named / total:.1f}%"
        line += f", hotA {100 * callers['main.hotA'] / max(1, named):.1f}% of them"
    return line


def run(target: str, seconds: int, busy_s: float) -> None:
    proc = subprocess.Popen([str(WORKLOADS / target), "600"])
    try:
        time.sleep(busy_s)
        with tempfile.TemporaryDirectory() as tmp:
            out, data = Path(tmp) / "b.folded", Path(tmp) / "perf.data"
            perf = subprocess.Popen(
                ["perf", "record", "-q", "-F", "99", "--call-graph", "dwarf", "-p",
                 str(proc.pid), "-o", str(data), "--", "sleep", str(seconds)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            subprocess.run(
                [str(BPFTOP), "record", "-p", str(proc.pid), "-d", str(seconds), "-o", str(out)],
                check=True, capture_output=True,
            )  # fmt: skip
            perf.wait()
            print(target)
            print(report("bpftop", folded(out), TARGETS[target]))
            print(report("perf", perf_stacks(data), TARGETS[target]))
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--busy", type=float, default=1.0, help="seconds before recording")
    parser.add_argument("targets", nargs="*", default=list(TARGETS))
    args = parser.parse_args()
    for target in args.targets:
        run(target, args.seconds, args.busy)


if __name__ == "__main__":
    main()
