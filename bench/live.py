"""The live view's own cost and start-up times, on a real terminal (a pty).

Starts a workload (the demo; ``--workload scale``: ~40,000 distinct stacks of
depth ~42 over 60 s at 999 Hz, bench.steady's scale case) and
``bpftop -p PID -F HZ -i 1`` (HZ: 99 for the demo, 999 for scale) on a pseudo-terminal,
reads the screen it draws, and reports:
  - time from launch to the first frame on screen (the header is drawn),
  - time from launch to the first data (a function of the demo is on screen),
  - bpftop's CPU use (% of one core) over ``--seconds``, from ``--settle`` s
    after BPF took over (its program loaded: on a loaded machine the compile,
    at nice +10, ran long after the first data; counting from the first data
    put LLVM's compile in the window),
  - bpftop's peak RSS (VmHWM) and its RSS when the window ends.

    sudo .venv/bin/python -m bench.live [--seconds 60] [--settle 5]
    sudo .venv/bin/python -m bench.live --workload scale     # 999 Hz, 60 s
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil

from bench.bytecode import compile_bpftop
from bench.steady import START_TIMEOUT_S, bpf_loaded
from tests.conftest import BPFTOP, WORKLOADS

# The first frame under the process in the (collapsed) call tree, the view
# bpftop opens on: on screen once the first samples are symbolized. With
# .eh_frame unwinding (the default) stacks reach _start; by frame pointers
# they stop at __libc_start_call_main. The scale workload's tree opens on its
# hot path, 40 frames deep, with _start above the screen's last 4 KB read
# (seen): there a function of its own (step_N) on screen is the mark.
DATA_MARK = re.compile(rb"_start(?!_)|__libc_start_call_main|step_\d")
WORKLOAD_HZ = {"demo": 99, "scale": 999}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workload", choices=sorted(WORKLOAD_HZ), default="demo")
    parser.add_argument("--hz", type=int, help="frequency (default: 99 demo, 999 scale)")
    parser.add_argument("--unwind", default="auto", help="bpftop's --unwind (auto, dwarf, fp)")
    parser.add_argument("--settle", type=float, default=5.0, help="s after BPF took over")
    args = parser.parse_args()
    compile_bpftop()
    hz = args.hz or WORKLOAD_HZ[args.workload]
    command = [str(WORKLOADS / args.workload)]
    if args.workload == "scale":  # it ends by itself: outlive the compile and the window
        command.append(str(int(START_TIMEOUT_S + args.settle + args.seconds + 60)))
    workload = subprocess.Popen(command)
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    launched = time.perf_counter()
    app = subprocess.Popen(
        [str(BPFTOP), "-p", str(workload.pid), "-F", str(hz), "-i", "1", "--unwind", args.unwind],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    proc = psutil.Process(app.pid)
    try:
        first_frame, first_data, cpu_start, measure_from = _watch(
            master, proc, launched, args.seconds, args.settle
        )
        cpu_end = proc.cpu_times()
        window = time.perf_counter() - measure_from
        used = (cpu_end.user + cpu_end.system) - (cpu_start.user + cpu_start.system)
        peak_rss_kib = _status_kib(app.pid, "VmHWM:")
        rss_kib = _status_kib(app.pid, "VmRSS:")
    finally:
        os.write(master, b"q")
        try:
            app.wait(10)
        except subprocess.TimeoutExpired:
            app.kill()
        workload.kill()
        workload.wait()
    print(f"first frame on screen: {first_frame:.3f} s after launch")
    print(f"first data on screen:  {first_data:.3f} s after launch")
    print(
        f"bpftop CPU on {args.workload} at {hz} Hz, 1 s ticks: {100 * used / window:.2f}% "
        f"of one core over {window:.0f} s"
    )
    print(f"bpftop peak RSS: {peak_rss_kib / 1024:.1f} MiB (at the end: {rss_kib / 1024:.1f})")


def _watch(
    master: int, proc: psutil.Process, launched: float, seconds: float, settle_s: float
) -> tuple[float, float, Any, float]:
    """Read the screen until BPF has run ``settle_s`` + ``seconds``: (first frame
    s, first data s, CPU times when the window began, when that was)."""
    screen = b""
    first_frame = first_data = bpf_at = None
    cpu_start = measure_from = None
    while time.perf_counter() - launched < START_TIMEOUT_S + settle_s + seconds:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                screen += os.read(master, 1 << 16)
            except OSError:
                break
        now = time.perf_counter() - launched
        if first_frame is None and b"profile:hz" in screen:
            first_frame = now
        if first_data is None and DATA_MARK.search(screen):
            first_data = now
        if bpf_at is None and bpf_loaded(proc.pid):
            bpf_at = now
        if measure_from is None and first_data and bpf_at and now >= bpf_at + settle_s:
            cpu_start, measure_from = proc.cpu_times(), time.perf_counter()
        screen = screen[-4096:]
        if measure_from is not None and time.perf_counter() - measure_from >= seconds:
            break
    assert first_frame is not None and first_data is not None, f"no data on screen: {screen!r}"
    assert cpu_start is not None and measure_from is not None
    return first_frame, first_data, cpu_start, measure_from


def _status_kib(pid: int, field: str) -> int:
    """A size in a live process's /proc status (``VmHWM:``: peak RSS), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return 0


if __name__ == "__main__":
    main()
