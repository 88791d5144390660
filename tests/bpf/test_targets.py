"""Targets: a command started held (nothing missed at start-up), several -p,
--children and -a, through `bpftop record` against the real kernel."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.bpf.test_record import parse_folded
from tests.bpf.test_reexec import wait_for_bpf
from tests.bpf.test_usdt import uprobes_with_programs
from tests.conftest import BPFTOP


def record(out: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(BPFTOP), "record", "-o", str(out), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return result


def test_a_launched_command_is_probed_from_its_first_instruction(
    workloads: Path, tmp_path: Path
) -> None:
    """`probed calls 1000 go` runs for ~1 ms; held until the uprobe is attached,
    every call is counted, and main -> run_calls, the first function main calls.
    Above main the stacks may differ: libc is mapped after the exec, and its
    unwind table can reach the walker while the calls run (seen in ~1 run of
    10): the calls before it stop at main's caller, the later ones reach _start."""
    probed = workloads / "probed"
    out = tmp_path / "calls.folded"
    spec = f"uprobe:{probed}:counted_call"
    record(out, "--probe", spec, "--", str(probed), "calls", "1000", "go")
    stacks = parse_folded(out)
    assert sum(stacks.values()) == 1000, stacks
    assert 1 <= len(stacks) <= 2, stacks
    for stack in stacks:
        assert stack[0] == "probed" and stack[-3:] == ("main", "run_calls", "counted_call")

    out = tmp_path / "main.folded"
    record(out, "--probe", f"uprobe:{probed}:main", "--", str(probed), "calls", "10", "go")
    assert {s[-1]: n for s, n in parse_folded(out).items()} == {"main": 1}


def test_several_pids(workloads: Path, tmp_path: Path) -> None:
    other = tmp_path / "probed2"
    shutil.copy(workloads / "probed", other)
    a = subprocess.Popen([str(workloads / "probed"), "latency", "100000", "go"])
    b = subprocess.Popen([str(other), "latency", "100000", "go"])
    try:
        out = tmp_path / "two.folded"
        record(out, "-p", str(a.pid), "-p", str(b.pid), "--probe", "uprobe:c:usleep", "-d", "2")
    finally:
        for proc in (a, b):
            proc.kill()
            proc.wait()
    per_process = {s[0] for s in parse_folded(out)}
    assert per_process == {"probed", "probed2"}


def test_children_are_followed(workloads: Path, tmp_path: Path) -> None:
    probed = workloads / "probed"
    script = f"{probed} calls 100 go; {probed} calls 200 go"
    out = tmp_path / "children.folded"
    record(
        out, "--children", "--probe", f"uprobe:{probed}:counted_call", "--", "/bin/sh", "-c", script
    )
    assert sum(parse_folded(out).values()) == 300


def test_all_processes(workloads: Path, tmp_path: Path) -> None:
    probed = workloads / "probed"
    out = tmp_path / "all.folded"
    cmd = [str(BPFTOP), "record", "-a", "-o", str(out), "-d", "6"]
    bpftop = subprocess.Popen([*cmd, "--probe", f"uprobe:{probed}:counted_call"])
    try:
        deadline = time.monotonic() + 60
        # Attached means a program on the uprobe (its breakpoint comes first, the
        # program with a later ioctl): ask the kernel, as bpftool perf does.
        while not any(
            path == os.path.realpath(probed) for path, _ in uprobes_with_programs(bpftop.pid)
        ):
            assert bpftop.poll() is None and time.monotonic() < deadline, "never attached"
            time.sleep(0.05)
        for n in ("300", "200"):
            subprocess.run([str(probed), "calls", n, "go"], check=True)
        assert bpftop.wait(timeout=60) == 0
    finally:
        bpftop.kill()
    assert sum(parse_folded(out).values()) == 500


def test_all_processes_names_short_lived_programs_from_their_own_files(
    workloads: Path, tmp_path: Path
) -> None:
    """`-a` while 20 programs of 60 ms run one after another (`reexec 0 60`,
    run_image burning in image_0_burn): each is labelled by its own name (read with its
    image at its exec: it is gone before its label is asked for, and was
    `pid N`) and its frames are named from its own files."""
    out = tmp_path / "all.folded"
    bpftop = subprocess.Popen(
        [str(BPFTOP), "record", "-a", "--no-early", "-F", "199", "-d", "12", "-o", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_bpf(bpftop.pid)
        for _ in range(20):
            subprocess.run([str(workloads / "reexec"), "0", "60"], check=True)
        _, err = bpftop.communicate(timeout=60)
        assert bpftop.returncode == 0, err
    finally:
        bpftop.kill()
    stacks = parse_folded(out)
    mine = {s: n for s, n in stacks.items() if s[0] == "reexec"}
    total = sum(mine.values())
    assert total >= 0.4 * 20 * 0.06 * 199, f"{total} samples of 20 x 60 ms at 199 Hz"
    named = sum(n for s, n in mine.items() if "run_image" in s and "[unknown]" not in s)
    assert named >= 0.95 * total, {";".join(s): n for s, n in mine.items()}
    unlabelled = {s[0] for s in stacks if s[0].startswith("pid ") and "run_image" in s}
    assert not unlabelled, unlabelled
