"""The hold of ``-- COMMAND`` (bpftop stops the command at its exec until its
probes and tables are in) is never profiled: off-CPU time starts at the release."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.bpf.test_record import parse_folded
from tests.conftest import BPFTOP


def test_the_hold_is_not_off_cpu_time(tmp_path: Path) -> None:
    """``sh -c 'sleep .5; sleep .5'`` blocks ~1 s; before, the hold added 1-2 s
    in do_signal_stop (2.01 of 3.01 s)."""
    out = tmp_path / "off.folded"
    done = subprocess.run(
        [str(BPFTOP), "record", "--probe", "offcpu", "-o", str(out), "--",
         "sh", "-c", "sleep .5; sleep .5"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stacks = parse_folded(out)
    total_s = sum(stacks.values()) / 1e9
    held = sum(n for s, n in stacks.items() if "do_signal_stop" in s) / 1e9
    assert held == 0, f"{held:.2f} s of the hold counted: {stacks.most_common(3)}"
    assert 0.9 <= total_s <= 1.3, stacks.most_common(5)
