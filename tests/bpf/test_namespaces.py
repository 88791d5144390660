"""A uprobe TARGET is resolved as the target process sees it (/proc/PID/root):
with another binary bind-mounted over the path in the target's own mount
namespace, the symbol's address is read from the file the target runs.

Before, it was read from the host's file at that path: the uprobe landed at
slow_path's host address in the other binary, which is fast_path there."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.bpf.test_record import parse_folded
from tests.conftest import BPFTOP, ROOT

BIND = ROOT / "tests" / "workloads" / "bind_mounted.sh"


def _symbol(binary: Path, name: str) -> int:
    out = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[0], 16) for line in out.splitlines() if line.endswith(f" {name}"))


def test_a_uprobe_attaches_to_the_file_the_target_sees(workloads: Path, tmp_path: Path) -> None:
    probed, other = workloads / "probed", workloads / "probed_nofp"
    assert _symbol(probed, "slow_path") != _symbol(other, "slow_path"), "the files must differ"
    target = subprocess.Popen(
        [str(BIND), str(other), str(probed), str(probed), "latency", "100000", "go"]
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "probed" not in _comm(target.pid):
            time.sleep(0.02)
        out = tmp_path / "ns.folded"
        done = subprocess.run(
            [str(BPFTOP), "record", "-p", str(target.pid), "-d", "2", "-o", str(out),
             "--probe", f"uprobe:{probed}:slow_path"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    finally:
        target.kill()
        target.wait()
    stacks = parse_folded(out)
    leaves = {stack[-1] for stack in stacks}
    assert leaves == {"slow_path"}, stacks.most_common(3)
    assert sum(stacks.values()) >= 50, "slow_path runs ~250 times a second"


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text()
    except OSError:
        return ""
