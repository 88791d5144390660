"""``bpftop record``'s own cost in steady state: CPU while sampling, peak memory.

Runs ``bpftop record -p PID -F HZ`` on a workload and reports:
  - bpftop's CPU (% of one core) over ``--window`` seconds (default: SECONDS
    - settle - 1) from ``--settle`` seconds after BPF took over (the program
    is loaded: bpftop holds bpf-prog fds and its perf events are open; on a
    loaded machine the compile, at nice +10, took 16-38 s, past the settle
    counted from the early perf_event sampler's start), then stops it (SIGINT),
  - its peak RSS (VmHWM) when sampling ends, and over its whole life (writing
    the file included: ``wait4``'s ru_maxrss),
  - the same window's CPU of ``perf record -F HZ -g`` on the same workload,
    run alongside as the reference (``--no-perf`` to skip it).
The two standard cases: the demo at 99 Hz, and the scale workload (~40,000
distinct stacks of depth ~42) at 999 Hz for 60 s:

    sudo .venv/bin/python -m bench.steady                       # both, 3 runs each
    sudo .venv/bin/python -m bench.steady --case demo --runs 1
    sudo .venv/bin/python -m bench.steady --case scale --unwind fp
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.bytecode import compile_bpftop
from tests.conftest import BPFTOP, WORKLOADS

CASES = {"demo": ("demo", 99, 30.0), "scale": ("scale", 999, 60.0)}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RunResult:
    cpu_percent: float  # bpftop, steady window
    hwm_sampling_mib: float  # VmHWM as sampling ends
    peak_mib: float  # whole life, writing included
    perf_cpu_percent: float | None  # perf record -g over the same window
    samples_line: str  # what bpftop said it wrote
    stacks: int  # distinct stacks written (folded lines)
    median_depth: float  # frames per written stack, median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", choices=[*CASES, "both"], default="both")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, help="sampling time (default: per case)")
    parser.add_argument("--hz", type=int, help="frequency (default: per case)")
    parser.add_argument("--settle", type=float, default=10.0, help="s after BPF took over")
    parser.add_argument("--window", type=float, help="measured s (default: seconds - settle - 1)")
    parser.add_argument("--unwind", default="auto", help="bpftop's --unwind (auto, dwarf, fp)")
    parser.add_argument("--no-perf", action="store_true", help="skip the perf reference")
    args = parser.parse_args()
    compile_bpftop()
    for case in CASES if args.case == "both" else [args.case]:
        workload, hz, seconds = CASES[case]
        hz, seconds = args.hz or hz, args.seconds or seconds
        window_s = args.window or seconds - args.settle - 1.0
        results = [
            run_once(workload, hz, window_s, args.settle, args.unwind, not args.no_perf)
            for _ in range(args.runs)
        ]
        report(case, hz, window_s, args.unwind, results)


def run_once(
    workload: str, hz: int, window_s: float, settle_s: float, unwind: str, perf: bool
) -> RunResult:
    target = subprocess.Popen([str(WORKLOADS / workload), str(START_TIMEOUT_S + window_s + 120)])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.folded"
        command = [str(BPFTOP), "record", "-p", str(target.pid), "-F", str(hz)]
        command += ["--unwind", unwind, "-o", str(out)]
        app = subprocess.Popen(command, stderr=subprocess.PIPE)
        try:
            _wait_bpf(app.pid)
            time.sleep(settle_s)
            reference = _start_perf(target.pid, hz, window_s, tmp) if perf else None
            cpu0, t0 = _cpu_s(app.pid), time.monotonic()
            time.sleep(window_s)
            cpu1, t1 = _cpu_s(app.pid), time.monotonic()
            hwm = _vm_hwm_kib(app.pid)
            app.send_signal(signal.SIGINT)
            perf_percent = _perf_percent(reference, window_s) if reference else None
            _, status, usage = os.wait4(app.pid, 0)
            app.returncode = os.waitstatus_to_exitcode(status)
            said = app.stderr.read().decode().strip() if app.stderr else ""
            stacks, depth = _folded_shape(out)
        finally:
            if app.returncode is None:
                app.kill()
                app.wait()
            target.kill()
            target.wait()
    return RunResult(
        cpu_percent=100 * (cpu1 - cpu0) / (t1 - t0),
        hwm_sampling_mib=hwm / 1024,
        peak_mib=usage.ru_maxrss / 1024,
        perf_cpu_percent=perf_percent,
        samples_line=said.splitlines()[-1] if said else f"exit {app.returncode}",
        stacks=stacks,
        median_depth=depth,
    )


def _folded_shape(path: Path) -> tuple[int, float]:
    """Distinct stacks in a folded file and their median depth (frames)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return 0, 0.0
    depths = [line.rsplit(" ", 1)[0].count(";") + 1 for line in lines if line]
    return len(depths), statistics.median(depths) if depths else 0.0


def _wait_bpf(pid: int) -> None:
    """Until BPF took over in ``pid``: its program is loaded (bpf-prog fds; the
    probe is attached right after, milliseconds) and its perf events are open.
    (The early perf_event sampler opens perf events long before, during the
    compile.)"""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if bpf_loaded(pid):
            return
        time.sleep(0.05)
    raise RuntimeError(f"bpftop (pid {pid}) never loaded BPF")


def bpf_loaded(pid: int) -> bool:
    """Has ``pid`` loaded its BPF program (bpf-prog fds) with its perf events open?"""
    links = _fd_links(pid)
    cpus = os.cpu_count() or 1
    return (
        bool(links.count("anon_inode:bpf-prog")) and links.count("anon_inode:[perf_event]") >= cpus
    )


def _fd_links(pid: int) -> list[str]:
    links = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    except OSError:
        return []
    return links


def _start_perf(pid: int, hz: int, window_s: float, tmp: str) -> subprocess.Popen[bytes]:
    command = ["perf", "record", "-q", "-F", str(hz), "-g", "-p", str(pid)]
    command += ["-o", f"{tmp}/perf.data", "--", "sleep", str(window_s)]
    return subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _perf_percent(perf: subprocess.Popen[bytes], window_s: float) -> float:
    _, _, usage = os.wait4(perf.pid, 0)
    perf.returncode = 0
    return 100 * (usage.ru_utime + usage.ru_stime) / window_s


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def report(case: str, hz: int, seconds: float, unwind: str, results: list[RunResult]) -> None:
    def median(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} (runs: {', '.join(f'{v:.2f}' for v in values)})"

    print(f"== {case}: record -F {hz} --unwind {unwind}, {seconds:g} s window after BPF + settle")
    print(f"   {results[-1].samples_line}")
    last = results[-1]
    print(f"   distinct stacks written: {last.stacks}, median depth {last.median_depth:g}")
    print(f"   bpftop CPU while sampling, % of a core:{median([r.cpu_percent for r in results])}")
    print(f"   VmHWM as sampling ends, MiB:        {median([r.hwm_sampling_mib for r in results])}")
    print(f"   peak RSS incl. writing, MiB:        {median([r.peak_mib for r in results])}")
    perf = [r.perf_cpu_percent for r in results if r.perf_cpu_percent is not None]
    if perf:
        print(f"   perf record -g CPU, % of a core:    {median(perf)}")


if __name__ == "__main__":
    main()
