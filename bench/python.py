"""Cost of Python frames: kernel time per sample, and overhead vs py-spy.

    sudo .venv/bin/python -m bench.python [--seconds 5] [--kernel-only] [--python 3.11 3.13 3.14]

Kernel cost: one program (frame-pointer native stacks, so the Python walk is
what changes) samples tests/workloads/py_split.py recursing to give ~10 and
~50 Python frames, once with the process described to the Python walker and
once not; BPF run-time stats (kernel.bpf_stats_enabled=1, run_time_ns /
run_cnt summed over our programs, tail calls included) divided by the
samples counted. The difference is the Python walk. ``--python`` runs it on
each interpreter of tests/pythons.py (3.13 and 3.14 in their Debian roots,
with chroot), one program for all.

offcpu (--offcpu-only, or after the above): the same program with the offcpu
probe on tests/workloads/py_block.py (``sleep`` with 100 µs units: main ->
run -> a/b, thousands of blocks a second, 4 Python frames), the process
described or not, or not a target at all; the kernel time of all our programs
(sched_switch runs for every task on the machine: the "not a target" run
measures the filtering for the others in the same time, which is subtracted)
divided by the blocks counted.

Overhead at 99 and 999 Hz (--hz): the workload's ``count`` mode alone, under ``bpftop
record`` and under ``py-spy record``, then alone again (in turn, same run),
each counting for the same wall time once the profiler has run SETTLE_S:
the workload's loop turns per wall second and per CPU second
(ratios to the run alone; the BPF programs run in the sampled task's
context, so their time shows in the per-CPU-second rate), and the
profiler process's own CPU seconds while the workload counted. The machine is
shared: read the ratios, and run it on a quiet machine for final figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from subprocess import DEVNULL

from bench.bytecode import compile_bpftop
from bpftop.bpf.probes import parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.raw import RawTick
from bpftop.bpf.stats import ProgStats
from bpftop.symbols.python.runtime import PythonRuntime, find_python
from bpftop.tui.collect.python_procs import walker_process
from tests.conftest import ROOT
from tests.pythons import ALL, PY311, Interpreter

PYTHON = "/usr/bin/python3.11"
WORKLOAD = ROOT / "tests" / "workloads" / "py_split.py"
BLOCK_WORKLOAD = ROOT / "tests" / "workloads" / "py_block.py"
BPFTOP = Path(sys.executable).parent / "bpftop"
FRAMES_AROUND_RECURSION = 4  # <module>, main, spin_left, burn
SETTLE_S = 20.0  # after starting a profiler, before the workload counts
TOOLS = ("none", "bpftop", "py-spy", "none")  # alone twice: the spread is the noise
PY_SPY = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")


def _start(*args: str, python: Interpreter = PY311) -> tuple[subprocess.Popen[str], dict[str, int]]:
    proc = python.popen(WORKLOAD, *args, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


def kernel_cost(
    sampler: CpuSampler, frames: int, described: bool, seconds: float, python: Interpreter = PY311
) -> str:
    depth = max(1, frames - FRAMES_AROUND_RECURSION)
    proc, _ = _start("deep", "600", str(depth), python=python)
    spent, tick = _measured(sampler, proc, described, seconds)
    samples = tick.total_samples
    seen = sum(len(s.python_stack) * s.count for s in tick.samples) / max(samples, 1)
    us = spent.run_time_ns / max(samples, 1) / 1000
    return f"{us:.2f} µs per sample ({samples} samples, {seen:.1f} Python frames seen)"


def offcpu_cost(sampler: CpuSampler, described: bool | None, seconds: float) -> tuple[int, int]:
    """(kernel ns, blocks counted) in ``seconds`` of py_block.py; ``described``
    None: the process is not a target."""
    proc = subprocess.Popen(
        [PYTHON, str(BLOCK_WORKLOAD), "sleep", "600", "0.0001"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    spent, tick = _measured(sampler, proc, described, seconds)
    return spent.run_time_ns, tick.total_samples


def _measured(
    sampler: CpuSampler, proc: subprocess.Popen[str], described: bool | None, seconds: float
) -> tuple[ProgStats, RawTick]:
    """(BPF run-time stats spent, the tick drained) over ``seconds`` of ``proc``
    (then killed), described to the Python walker or not; ``described`` None:
    not a target at all."""
    try:
        runtime = find_python(proc.pid)
        assert isinstance(runtime, PythonRuntime) and sampler.python is not None
        if described:
            process = walker_process(runtime)
            assert not isinstance(process, str), process
            sampler.python.describe(proc.pid, process)
        sampler.set_targets([proc.pid] if described is not None else [])
        time.sleep(0.3)
        sampler.drain()
        before = sampler.prog_stats()
        time.sleep(seconds)
        tick = sampler.drain()
        spent = sampler.prog_stats() - before
        sampler.python.forget(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    return spent, tick


def offcpu_costs(seconds: float) -> None:
    with CpuSampler(99, unwind="fp", probe=parse_spec("offcpu")) as sampler:
        sampler.load()
        sampler.start()
        for _ in range(3):
            others_ns, _ = offcpu_cost(sampler, None, seconds)
            for described in (False, True):
                what = "Python walk" if described else "native only"
                spent_ns, blocks = offcpu_cost(sampler, described, seconds)
                us = (spent_ns - others_ns) / max(blocks, 1) / 1000
                print(
                    f"offcpu, {what}: {us:.2f} µs per block ({blocks} blocks; "
                    f"{others_ns / 1e6:.1f} ms for other tasks subtracted)",
                    flush=True,
                )


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat") as stream:
        fields = stream.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def overhead(tool: str, seconds: float, out_dir: str, hz: int) -> dict[str, float]:
    """The workload's rates under ``tool`` ("none", "bpftop", "py-spy") and the
    tool's CPU seconds while the workload counted (after SETTLE_S to start)."""
    proc = subprocess.Popen(
        [PYTHON, str(WORKLOAD), "count", str(seconds)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdout.readline()
    pid = str(proc.pid)
    commands = {
        "bpftop": [str(BPFTOP), "record", "-p", pid, "-F", str(hz), "-o", f"{out_dir}/b.folded"],
        "py-spy": [PY_SPY, "record", "-p", pid, "-r", str(hz), "-f", "raw", "-o", f"{out_dir}/p"],
    }
    profiler = None
    if tool in commands:
        profiler = subprocess.Popen(commands[tool], stdout=DEVNULL, stderr=DEVNULL)
    time.sleep(SETTLE_S)  # bpftop's compile is over: measure steady state
    before = _cpu_s(profiler.pid) if profiler is not None else 0.0
    proc.stdin.write("go\n")
    proc.stdin.flush()
    result: dict[str, float] = json.loads(proc.stdout.readline())
    result["tool_cpu_s"] = _cpu_s(profiler.pid) - before if profiler is not None else 0.0
    proc.wait()
    if profiler is not None:
        profiler.wait(timeout=60)
    return result


def kernel_costs(seconds: float, pythons: tuple[Interpreter, ...] = (PY311,)) -> None:
    with CpuSampler(999, unwind="fp") as sampler:
        sampler.load()
        sampler.start()
        for python in pythons:
            for frames in (10, 50):
                for described in (False, True):
                    what = "Python walk" if described else "native only"
                    cost = kernel_cost(sampler, frames, described, seconds, python)
                    print(f"{python}, {frames} Python frames, {what}: {cost}", flush=True)


def overheads(seconds: float, hz: int) -> None:
    with tempfile.TemporaryDirectory() as out_dir:
        runs = [(tool, overhead(tool, seconds, out_dir, hz)) for tool in TOOLS]
    alone = {
        key: sum(r[key] for t, r in runs if t == "none") / TOOLS.count("none")
        for key in ("per_wall_s", "per_cpu_s")
    }
    for tool, run in runs:
        wall = run["per_wall_s"] / alone["per_wall_s"]
        cpu = run["per_cpu_s"] / alone["per_cpu_s"]
        print(
            f"{hz} Hz, {tool}: workload at {wall:.3f} of its speed alone per wall second, "
            f"{cpu:.3f} per CPU second; profiler's own CPU {run['tool_cpu_s']:.2f} s in that time",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per kernel-cost case")
    parser.add_argument("--overhead-only", action="store_true")
    parser.add_argument("--offcpu-only", action="store_true")
    parser.add_argument("--kernel-only", action="store_true", help="the kernel cost alone")
    parser.add_argument(
        "--python", nargs="+", default=["3.11"], choices=[p.version for p in ALL],
        help="interpreters for the kernel cost",
    )  # fmt: skip
    parser.add_argument("--hz", type=int, nargs="+", default=[99, 999], help="overhead rates")
    args = parser.parse_args()
    compile_bpftop()
    if args.offcpu_only:
        offcpu_costs(args.seconds)
        return
    pythons = tuple(p for p in ALL if p.version in args.python)
    if args.kernel_only:
        kernel_costs(args.seconds, pythons)
        return
    if not args.overhead_only:
        kernel_costs(args.seconds, pythons)
        offcpu_costs(args.seconds)
    for hz in args.hz:
        overheads(args.seconds * 4, hz)


if __name__ == "__main__":
    main()
