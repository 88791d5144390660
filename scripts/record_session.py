"""Record real live sessions for the screenshots (as root).

Runs the live view's own collector, made as ``bpftop -p PID`` makes it (the
real BPF sampler at 99 Hz, a tick a second, perf_event's samples until BPF
is in; file:line asked for as `L` asks) on two targets: the bundled demo
workload and a Python program (tests/workloads/py_mix.py), each for
``--seconds`` after BPF took over, and writes each session's snapshots
(``tui.formats.snapshot_file``) to screenshots/live-demo.json and
screenshots/live-python.json. scripts/screenshot.py renders them.

    sudo .venv/bin/python scripts/record_session.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from bpftop.base.errors import BpftopError
from bpftop.tui.cli.args import parse_options
from bpftop.tui.cli.early_start import open_early
from bpftop.tui.cli.session import check
from bpftop.tui.collect.assemble import make_collector
from bpftop.tui.formats.snapshot_file import write_session
from bpftop.tui.model.snapshot import Snapshot

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = {
    "live-demo": [str(ROOT / "build/workloads/demo"), "120"],
    "live-python": ["/usr/bin/python3.11", str(ROOT / "tests/workloads/py_mix.py"), "120"],
}
LOAD_WAIT_S = 180.0  # the compile on a loaded 2-core VM


def record(command: list[str], seconds: float) -> list[Snapshot]:
    """The snapshots of a live session on ``command``: until ``seconds`` after BPF's maps show."""
    target = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=ROOT)
    snapshots: list[Snapshot] = []
    errors: list[BpftopError] = []
    time.sleep(0.5)  # started, as a process one profiles is
    options = parse_options(["-p", str(target.pid)], recording=False)
    early = open_early(options)  # as bpftop's main: samples from before the compile
    sampler = check(options)
    assert sampler is not None
    collector = make_collector(options, sampler, early)
    collector.source_lines = True
    try:
        collector.start(snapshots.append, on_error=errors.append)
        deadline = time.monotonic() + LOAD_WAIT_S
        while not (snapshots and snapshots[-1].maps) and time.monotonic() < deadline:
            if errors:
                raise errors[0]
            time.sleep(0.1)
        if not (snapshots and snapshots[-1].maps):
            raise SystemExit(f"record_session: BPF never loaded for {command[0]}")
        time.sleep(seconds)
        kept = list(snapshots)  # not the one stopping makes (its tick is a few ms long)
    finally:
        collector.stop()
        if early is not None:
            early.close()
        target.kill()
        target.wait()
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("record_session: bpftop needs root: run it as root", file=sys.stderr)
        return 77
    for name, command in SESSIONS.items():
        snapshots = record(command, args.seconds)
        meta = {
            "command": " ".join(Path(c).name if c.startswith("/") else c for c in command),
            "seconds_after_bpf": f"{args.seconds:g}",
            "kernel": platform.release(),
            "recorded": time.strftime("%Y-%m-%d", time.gmtime()),
        }
        path = ROOT / "screenshots" / f"{name}.json"
        write_session(path, snapshots, meta)
        print(f"{path}: {len(snapshots)} snapshots, {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
