"""Rust, Go, LLD-linked C and Node stacks: bpftop beside perf.

Starts each target, lets it get busy, then runs ``bpftop record`` (default
flags) and ``perf record --call-graph dwarf`` on it at the same time for the
same seconds (Node: ``perf record -g``, as perf is used with V8's perf map,
which both tools name the JS functions from), and prints per tool the share
of samples whose stack reaches the target's main (Go and Node: the share
naming hotA or hotB under run, and hotA's part of those, 2:1 = 66.7%):

    sudo flock /tmp/bench.lock .venv/bin/python -m bench.runtimes
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "build" / "workloads"
BPFTOP = ROOT / ".venv" / "bin" / "bpftop"
# target -> the frame a whole stack holds
TARGETS = {
    "rshot": "rshot::main",
    "chain_nofp_lld": "main",
    "goshot": "main.run",
    "nodeshot": "JS:*run ",
}
# target -> the two callees whose 2:1 split is reported
CALLERS = {"goshot": ("main.hotA", "main.hotB"), "nodeshot": ("JS:*hotA ", "JS:*hotB ")}
NODE_FLAGS = ("--perf-basic-prof", "--no-turbo-inlining")

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


def report(tool: str, stacks: Stacks, wanted: str, pair: tuple[str, str] | None) -> str:
    total = sum(stacks.values()) or 1
    whole = sum(n for s, n in stacks.items() if any(f.startswith(wanted) for f in s))
    line = f"  {tool:6} {100 * whole / total:5.1f}% of {total} reach {wanted.strip()}"
    if pair is not None:
        callers = Counter[str]()
        for stack, n in stacks.items():
            for caller in pair:
                if any(f.startswith(caller) for f in stack):
                    callers[caller] += n
        named = sum(callers.values())
        line += f"; callers named {100 * named / total:.1f}%"
        line += f", {pair[0].strip()} {100 * callers[pair[0]] / max(1, named):.1f}% of them"
    return line


def command(target: str) -> list[str]:
    if target == "nodeshot":
        return [shutil.which("node") or "node", *NODE_FLAGS, str(WORKLOADS / "nodeshot.js"), "600"]
    return [str(WORKLOADS / target), "600"]


def run(target: str, seconds: int, busy_s: float, hz: int) -> None:
    call_graph = ["-g"] if target == "nodeshot" else ["--call-graph", "dwarf"]
    with tempfile.TemporaryDirectory() as tmp:  # node's cwd: V8 writes an isolate log there
        proc = subprocess.Popen(command(target), stdout=subprocess.DEVNULL, cwd=tmp)
        try:
            time.sleep(busy_s)
            out, data = Path(tmp) / "b.folded", Path(tmp) / "perf.data"
            perf = subprocess.Popen(
                ["perf", "record", "-q", "-F", str(hz), *call_graph, "-p",
                 str(proc.pid), "-o", str(data), "--", "sleep", str(seconds)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            subprocess.run(
                [str(BPFTOP), "record", "-p", str(proc.pid), "-d", str(seconds), "-F", str(hz),
                 "-o", str(out)],
                check=True, capture_output=True,
            )  # fmt: skip
            perf.wait()
            print(target)
            pair = CALLERS.get(target)
            print(report("bpftop", folded(out), TARGETS[target], pair))
            print(report("perf", perf_stacks(data), TARGETS[target], pair))
        finally:
            proc.kill()
            proc.wait()
            Path(f"/tmp/perf-{proc.pid}.map").unlink(missing_ok=True)  # V8's, left at a kill


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--busy", type=float, default=1.0, help="seconds before recording")
    parser.add_argument("--hz", type=int, default=99, help="sampling rate of both tools")
    parser.add_argument("targets", nargs="*", default=list(TARGETS))
    args = parser.parse_args()
    for target in args.targets:
        run(target, args.seconds, args.busy, args.hz)


if __name__ == "__main__":
    main()
