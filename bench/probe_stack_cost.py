"""Kernel cost per event of walked probe stacks vs ``bpf_get_stackid`` (BPF run-time stats).

    sudo .venv/bin/python -m bench.probe_stack_cost [--calls 200000] [--rounds 3]

One compiled program (``--unwind auto``), a held ``probed_nofp`` target (no
frame pointers) whose unwind tables are in the walker. For each probe, the
same run twice per round: with the walker (mode "auto") and with the walker's
mode map set to "fp" (every stack from ``bpf_get_stackid``, as ``--unwind fp``
and bpftrace's ``ustack`` do). The figure is the run time the kernel accounts
to the probe's handler programs (tail calls run inside it) divided by its runs
and by the events counted. For uprobes and uretprobes every run is an event;
tracepoint and sched_switch handlers also run (cheaply, filtered out) for
other processes, so "per event" overstates their cost. Median of the rounds;
the machine is shared, so run it on a quiet one for final figures. Prints the
mean user frames per event, and whether stacks reach ``main``. Where bpftrace
has the same counting (``@[ustack] = count()``: ``bpf_get_stackid``), it is
measured in the same run from its programs' fdinfo, against the walker.
"""

from __future__ import annotations

import argparse
import ctypes as ct
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from bpftop.bpf.probes import parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.stats import ProgStats, prog_stats
from bpftop.bpf.unwinder import MODES
from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.collect.unwind_feed import UnwindFeed
from tests.conftest import WORKLOADS

PROBED = WORKLOADS / "probed_nofp"
# (label, probe spec, probed mode, N, handler programs whose run time counts)
Case = tuple[str, str, str, str, tuple[str, ...]]
CASES: tuple[Case, ...] = (
    ("uprobe", f"uprobe:{PROBED}:counted_call", "calls", "CALLS", ("on_probe_hit",)),
    ("uprobe libc", "uprobe:c:write", "writes", "CALLS", ("on_probe_hit",)),
    ("uretprobe", f"uretprobe:{PROBED}:timed", "latency", "200", ("on_call_return",)),
    ("tracepoint", "tracepoint:syscalls:sys_enter_write", "writes", "CALLS", ("on_tracepoint",)),
    ("offcpu", "offcpu", "latency", "200", ("tracepoint__sched__sched_switch",)),
)

# The same counting by bpftrace (its ustack is bpf_get_stackid), where it has one.
BPFTRACE = {
    "uprobe": "uprobe:PROG:counted_call /pid == PID/ { @[ustack] = count(); }",
    "uprobe libc": "uprobe:libc:write /pid == PID/ { @[ustack] = count(); }",
    "tracepoint": "tracepoint:syscalls:sys_enter_write /pid == PID/ "
    "{ @[ustack, kstack] = count(); }",
}


def _handler_stats(sampler: CpuSampler, names: tuple[str, ...]) -> ProgStats:
    total = ProgStats()
    for name, fn in sampler._bpf.funcs.items():
        if any(name.decode() in (n, f"{n}_1") for n in names):
            total += prog_stats(fn.fd)
    return total


def _wait_blocked(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "S":
            return
        time.sleep(0.005)


def _one(
    sampler: CpuSampler, case: Case, mode: str, calls: int
) -> tuple[float, float, float, float]:
    """(ns per run, ns per event, user frames per event, share of events reaching main)."""
    _, spec, probed_mode, n, handlers = case
    n = str(calls) if n == "CALLS" else n
    proc = subprocess.Popen([str(PROBED), probed_mode, n], stdin=subprocess.PIPE)
    feed = None
    try:
        _wait_blocked(proc.pid)
        assert sampler.unwinder is not None
        feed = UnwindFeed(proc.pid).start()
        feed.attach(sampler.unwinder)
        feed.ready.wait(120)
        sampler._bpf[b"unwind_mode"][ct.c_int(0)] = ct.c_uint32(MODES[mode])
        sampler.set_targets([proc.pid])
        sampler.switch(parse_spec(spec))
        symbols = Symbolizer()
        symbols.prepare(proc.pid, preload=True)
        before = _handler_stats(sampler, handlers)
        assert proc.stdin is not None
        proc.stdin.write(b"g")
        proc.stdin.close()
        proc.wait(300)
        time.sleep(0.05)
        spent = _handler_stats(sampler, handlers) - before
        tick = sampler.drain()
    finally:
        if feed is not None:
            feed.close()
        proc.kill()
        proc.wait()
    events = max(tick.total_samples, 1)
    frames = sum(len(s.user_stack) * s.count for s in tick.samples) / events
    reach = sum(
        s.count
        for s in tick.samples
        if any(f.function == "main" for f in symbols.user_frames(proc.pid, s.user_stack))
    )
    return (
        spent.run_time_ns / max(spent.run_count, 1),
        spent.run_time_ns / events,
        frames,
        reach / events,
    )


def _bpftrace_cost(case: Case, calls: int) -> tuple[float, float] | None:
    """(ns per run, ns per event) of bpftrace counting the same probe by
    ``ustack`` (bpf_get_stackid), from its prog fds' fdinfo; None: no bpftrace
    or no equivalent program."""
    label, _, probed_mode, n, _ = case
    program = BPFTRACE.get(label)
    if program is None or shutil.which("bpftrace") is None:
        return None
    n = str(calls) if n == "CALLS" else n
    proc = subprocess.Popen([str(PROBED), probed_mode, n], stdin=subprocess.PIPE)
    trace = None
    try:
        _wait_blocked(proc.pid)
        text = program.replace("PROG", str(PROBED)).replace("PID", str(proc.pid))
        trace = subprocess.Popen(
            ["bpftrace", "-e", text], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert trace.stdout is not None
        trace.stdout.readline()  # "Attaching N probes..."
        time.sleep(0.5)
        before = _fdinfo_stats(trace.pid)
        assert proc.stdin is not None
        proc.stdin.write(b"g")
        proc.stdin.close()
        proc.wait(300)
        spent = _fdinfo_stats(trace.pid) - before
    finally:
        if trace is not None:
            trace.kill()
            trace.wait()
        proc.kill()
        proc.wait()
    events = int(n) * (1 if label != "uretprobe" else 2)
    return spent.run_time_ns / max(spent.run_count, 1), spent.run_time_ns / max(events, 1)


def _fdinfo_stats(pid: int) -> ProgStats:
    """Run time and runs summed over the BPF programs process ``pid`` holds."""
    total = ProgStats()
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            text = fd.read_text()
        except OSError:
            continue
        if "prog_type:" not in text:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        total += ProgStats(int(fields.get("run_time_ns", 0)), int(fields.get("run_cnt", 0)))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with CpuSampler(99, unwind="auto") as sampler:
        sampler.load()
        sampler.set_targets([])
        sampler.start()
        for case in CASES:
            results: dict[str, list[tuple[float, float, float, float]]] = {"fp": [], "auto": []}
            for _ in range(args.rounds):
                for mode in ("fp", "auto"):
                    results[mode].append(_one(sampler, case, mode, args.calls))
            line = [f"{case[0]:12}"]
            per_event = {}
            for mode, label in (("fp", "get_stackid"), ("auto", "walker")):
                rows = results[mode]
                per_run = statistics.median(r[0] for r in rows)
                per_event[mode] = statistics.median(r[1] for r in rows)
                frames = statistics.median(r[2] for r in rows)
                reach = statistics.median(r[3] for r in rows)
                line.append(
                    f"{label} {per_run / 1000:.2f} µs/run {per_event[mode] / 1000:.2f} µs/event "
                    f"{frames:.1f} frames, {reach:.0%} reach main"
                )
            ratio = per_event["auto"] / max(per_event["fp"], 1.0)
            line.append(f"walker/get_stackid {ratio:.2f}x")
            sampler.switch(parse_spec("profile:hz:1"))  # bpftrace cannot share our uprobe
            sampler.drain()  # detaches it
            traced = [_bpftrace_cost(case, args.calls) for _ in range(args.rounds)]
            if all(t is not None for t in traced):
                per_run = statistics.median(t[0] for t in traced if t is not None)
                event = statistics.median(t[1] for t in traced if t is not None)
                line.append(
                    f"bpftrace ustack {per_run / 1000:.2f} µs/run {event / 1000:.2f} µs/event, "
                    f"walker/bpftrace {per_event['auto'] / max(event, 1.0):.2f}x"
                )
            print("  ".join(line), flush=True)


if __name__ == "__main__":
    main()
