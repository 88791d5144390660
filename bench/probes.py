"""Probe benchmarks: switch latency (Enter to counting) and cost per event on the target.

1. Switch latency: one compiled program, a ``probed mixed`` target that hits
   every probe kind every few ms; for each spec, the time from calling
   ``switch()`` (what the collector does when Enter is pressed in the probe
   dialog) to the new probe's first count in the kernel map, and to
   ``switch()`` returning. A drain (a tick) runs between switches, as live.
2. Cost per event: ``probed calls|writes|pingpong N`` timed by itself
   (elapsed_s of its own loop) alone, under bpftop's probe, and under
   bpftrace doing the same counting by stack; (with - alone) / N.

    sudo .venv/bin/python -m bench.probes [--rounds 5] [--calls 200000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import time

from bpftop.bpf.probes import parse_spec
from bpftop.bpf.program import CpuSampler
from tests.conftest import WORKLOADS

PROBED = WORKLOADS / "probed"
SWITCH_SPECS = (
    "profile:hz:999",
    "software:page-faults:1",
    "software:context-switches:1",
    f"uprobe:{PROBED}:slow_path",
    f"uretprobe:{PROBED}:timed",
    "tracepoint:syscalls:sys_enter_clock_nanosleep",
    "offcpu",
    "uprobe:c:clock_nanosleep",
)


def counted_in_kernel(sampler: CpuSampler) -> bool:
    gen = sampler.generation
    return sampler.entries(f"counts{gen}") + sampler.entries(f"wcounts{gen}") > 0


def switch_latency(rounds: int) -> dict[str, list[tuple[float, float]]]:
    """spec -> [(ms until switch() returned, ms until the first count)]."""
    target = subprocess.Popen([str(PROBED), "mixed", "3600", "go"])
    results: dict[str, list[tuple[float, float]]] = {s: [] for s in SWITCH_SPECS}
    try:
        with CpuSampler(99) as sampler:
            sampler.load()
            sampler.set_targets([target.pid])
            sampler.start()
            for _ in range(rounds):
                for spec in SWITCH_SPECS:
                    parsed = parse_spec(spec)
                    started = time.perf_counter()
                    sampler.switch(parsed)
                    returned = time.perf_counter()
                    while not counted_in_kernel(sampler):
                        if time.perf_counter() - started > 5:
                            raise RuntimeError(f"{spec} counted nothing in 5 s")
                        time.sleep(0.0002)
                    counting = time.perf_counter()
                    results[spec].append((1e3 * (returned - started), 1e3 * (counting - started)))
                    print(f"    {spec}: {results[spec][-1]}", flush=True)
                    time.sleep(0.3)
                    sampler.drain()  # a tick: detaches the previous probe
    finally:
        target.kill()
        target.wait()
    return results


def _elapsed(out: str) -> float:
    for line in out.splitlines():
        if line.startswith("elapsed_s="):
            return float(line.split("=")[1])
    raise RuntimeError(f"no elapsed_s in {out!r}")


def run_alone(mode: str, n: int) -> float:
    env = {**os.environ, "PROBED_REPORT": "1"}
    out = subprocess.run(
        [str(PROBED), mode, str(n), "go"], env=env, capture_output=True, text=True, check=True
    )
    return _elapsed(out.stdout)


def run_bpftop(sampler: CpuSampler, spec: str, mode: str, n: int) -> float:
    env = {**os.environ, "PROBED_REPORT": "1"}
    proc = subprocess.Popen(
        [str(PROBED), mode, str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    sampler.set_targets([proc.pid])
    sampler.switch(parse_spec(spec))
    out, _ = proc.communicate("g")
    sampler.drain()
    return _elapsed(out)


def run_bpftrace(program: str, mode: str, n: int) -> float | None:
    if shutil.which("bpftrace") is None:
        return None
    env = {**os.environ, "PROBED_REPORT": "1"}
    out = subprocess.run(
        ["bpftrace", "-e", program, "-c", f"{PROBED} {mode} {n} go"],
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"bpftrace failed: {out.stderr.strip()[-300:]}")
    return _elapsed(out.stdout)


Case = tuple[str, str, str | None, str, int, int]
"""(label, bpftop spec, bpftrace program, workload mode, N, events per round)."""


def _cases(calls: int) -> tuple[Case, ...]:
    return (
        (
            "uprobe hit",
            f"uprobe:{PROBED}:counted_call",
            f"uprobe:{PROBED}:counted_call {{ @[ustack] = count(); }}",
            "calls",
            calls,
            1,
        ),
        (
            "uretprobe call (entry+return, latency)",
            f"uretprobe:{PROBED}:counted_call",
            f"uprobe:{PROBED}:counted_call {{ @s[tid] = nsecs; }} "
            f"uretprobe:{PROBED}:counted_call /@s[tid]/ "
            "{ @[ustack] = sum(nsecs - @s[tid]); delete(@s[tid]); }",
            "calls",
            calls,
            1,
        ),
        (
            "tracepoint hit (sys_enter_write)",
            "tracepoint:syscalls:sys_enter_write",
            "tracepoint:syscalls:sys_enter_write /pid == cpid/ { @[ustack, kstack] = count(); }",
            "writes",
            calls * 5,
            1,
        ),
        ("offcpu per blocking switch", "offcpu", None, "pingpong", calls, 2),
        (
            "software:context-switches per switch",
            "software:context-switches:1",
            None,
            "pingpong",
            calls,
            2,
        ),
    )


def costs(rounds: int, calls: int) -> list[tuple[str, float, float | None]]:
    """(what, bpftop ns per event, bpftrace ns per event or None)."""
    rows = []
    with CpuSampler(99) as sampler:
        sampler.load()
        sampler.set_targets([])
        sampler.start()
        for label, spec, trace, mode, n, per in _cases(calls):
            alone = statistics.median(run_alone(mode, n) for _ in range(rounds))
            ours = statistics.median(run_bpftop(sampler, spec, mode, n) for _ in range(rounds))
            sampler.switch(parse_spec("profile:hz:99"))
            sampler.drain()  # detached: bpftrace cannot attach where our uprobe is
            theirs = None
            if trace is not None and shutil.which("bpftrace"):
                runs = [run_bpftrace(trace, mode, n) for _ in range(rounds)]
                theirs = statistics.median(r for r in runs if r is not None)
            events = n * per
            rows.append(
                (
                    label,
                    1e9 * (ours - alone) / events,
                    None if theirs is None else 1e9 * (theirs - alone) / events,
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--skip-costs", action="store_true")
    args = parser.parse_args()
    print("switch latency (ms): median / max of switch() returning, of the first count")
    for spec, runs in switch_latency(args.rounds).items():
        ret = [r for r, _ in runs]
        first = [c for _, c in runs]
        print(
            f"  {spec:55s} returned {statistics.median(ret):6.1f} / {max(ret):6.1f}"
            f"   counting {statistics.median(first):6.1f} / {max(first):6.1f}"
        )
    if args.skip_costs:
        return
    print("cost on the target per event (ns, median of runs; bpftrace doing the same counting)")
    for label, ours, theirs in costs(args.rounds, args.calls):
        other = "n/a" if theirs is None else f"{theirs:9.0f}"
        print(f"  {label:42s} bpftop {ours:9.0f}   bpftrace {other}")


if __name__ == "__main__":
    main()
