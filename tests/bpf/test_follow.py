"""Followed processes against the real kernel: --children names short-lived
children and collects until the last followed process exits; a command bpftop
launched never outlives a SIGKILLed bpftop stopped; -a names every thread."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import psutil

from bpftop.bpf.program import CpuSampler
from bpftop.tui.cli.args import parse_options
from bpftop.tui.cli.session import check
from bpftop.tui.collect.collector import Collector
from bpftop.tui.model.snapshot import Snapshot
from tests.bpf.test_collector import Watched
from tests.bpf.test_record import parse_folded
from tests.bpf.test_targets import record
from tests.conftest import BPFTOP


def _unnamed(frame: str) -> bool:
    return frame == "[unknown]" or "+0x" in frame


def test_short_lived_children_are_named_like_their_parent(workloads: Path, tmp_path: Path) -> None:
    """120 children of 40 ms CPU each, one after another: each is gone long
    before the tick that first sees its samples, so it is named from the maps
    its parent had at the fork (it shares them)."""
    out = tmp_path / "children.folded"
    forker = workloads / "forker"
    record(out, "--children", "-F", "999", "--", str(forker), "children", "120", "40")
    stacks = parse_folded(out)
    total = sum(stacks.values())
    in_children = sum(n for s, n in stacks.items() if "child_spin" in s)
    unnamed = sum(n for s, n in stacks.items() if any(map(_unnamed, s[1:])))
    assert total >= 1000, stacks.most_common(5)  # ~4.8 s of CPU at 999 Hz
    assert in_children >= 0.85 * total, stacks.most_common(5)
    assert unnamed <= 0.10 * total, stacks.most_common(5)
    assert {s[0] for s in stacks} == {"forker"}, "children carry their parent's name"
    chains = Counter[tuple[str, ...]]()
    for s, n in stacks.items():
        if "child_spin" in s:
            chains[s[1 : s.index("child_spin") + 1]] += n
    # Walked from .eh_frame (the child has its parent's tables from the fork on):
    # from _start; a child whose entry the kernel could not copy keeps frame pointers.
    (chain, most), *_ = chains.most_common()
    assert chain[-3:] == ("main", "children", "child_spin") and chain[0] == "_start", chains
    assert most >= 0.95 * in_children, chains


def test_children_are_collected_after_their_parent_exits(workloads: Path, tmp_path: Path) -> None:
    """The parent exits after 0.2 s; its orphaned child then spins 1.5 s of
    CPU: the run goes on until the child exits, and its samples are there."""
    out = tmp_path / "orphan.folded"
    forker = workloads / "forker"
    record(out, "--children", "-F", "199", "--", str(forker), "outlive", "1.5")
    stacks = parse_folded(out)
    orphan = sum(n for s, n in stacks.items() if "orphan_spin" in s)
    parent = sum(n for s, n in stacks.items() if "parent_spin" in s)
    assert orphan >= 0.7 * 1.5 * 199, stacks.most_common(5)
    assert parent >= 0.3 * 0.2 * 199, stacks.most_common(5)


def _held_child(bpftop: subprocess.Popen[str], timeout_s: float) -> int:
    """The pid of the command bpftop started held (stopped, its child)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in psutil.Process(bpftop.pid).children():
            if child.status() == psutil.STATUS_STOPPED:
                return child.pid
        time.sleep(0.005)
    raise AssertionError("bpftop did not start the command held")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def test_a_sigkilled_bpftop_does_not_leave_its_command_stopped(
    workloads: Path, tmp_path: Path
) -> None:
    """kill -9 bpftop while it compiles (the command is held, stopped): the
    command must end (or run), never stay stopped with init as its parent."""
    cmd = [str(BPFTOP), "record", "-o", str(tmp_path / "x.folded"), "--"]
    bpftop = subprocess.Popen([*cmd, str(workloads / "forker"), "outlive", "0.1"], text=True)
    try:
        held = _held_child(bpftop, 60)  # bpftop starts slowly on a loaded machine
        assert _state(held) == "T"  # still held: bpftop is compiling
        os.kill(bpftop.pid, signal.SIGKILL)
        bpftop.wait(timeout=10)
        deadline = time.monotonic() + 5
        while _state(held) == "T" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _state(held) not in ("T", "t"), f"command {held} left stopped"
    finally:
        bpftop.kill()
        bpftop.wait()


def _named_threads(snap: Snapshot) -> Counter[str]:
    return Counter(t.name for t in snap.threads)


def test_all_processes_name_every_thread_and_sum_up_the_system(workloads: Path) -> None:
    """-a: threads of two processes named with pthread_setname_np keep their
    names; the name both processes give a thread is told apart by pid:tid;
    the header's process line is the system's summary."""
    forker = str(workloads / "forker")
    watched = Watched(Collector(0, CpuSampler(99, system_wide=True), 0.5, system_wide=True))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        watched.wait(lambda s: s.stats.total_samples > 0, 60)
        procs = [subprocess.Popen([forker, "threads", "3", n]) for n in ("fkalpha", "fkbeta")]
        wanted = {"fkalpha-a", "fkalpha-b", "fkbeta-a", "fkbeta-b"}
        snap = watched.wait(lambda s: wanted <= set(_named_threads(s)), 40)
        snap = watched.wait(
            lambda s: len({t.name for t in s.threads if t.name.startswith("fkworker ")}) == 2, 20
        )
        workers = {t.name: t.tid for t in snap.threads if t.name.startswith("fkworker ")}
        pids = {p.pid for p in procs}
        for name, tid in workers.items():
            pid, _, tid_text = name.removeprefix("fkworker ").partition(":")
            assert int(pid) in pids and int(tid_text) == tid, workers
        system = snap.process
        assert system is not None and system.pid == 0 and system.cpus == os.cpu_count()
        assert system.processes >= 2 and system.num_threads >= 6
        assert 0.0 < system.cpu_percent <= 100.0 * system.cpus + 1
    finally:
        watched.collector.stop()
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_stopped_target_is_pointed_out(capsys) -> None:
    """bpftop -p on a stopped process (e.g. left held by an older bpftop that
    was killed) says so before it starts, with the way out."""
    target = subprocess.Popen(["sleep", "60"])
    try:
        os.kill(target.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while _state(target.pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        check(parse_options(["-p", str(target.pid)], recording=False))
        said = capsys.readouterr().err
        assert f"process {target.pid} is stopped" in said and f"kill -CONT {target.pid}" in said
        os.kill(target.pid, signal.SIGCONT)
        check(parse_options(["-p", str(target.pid)], recording=False))
        assert "stopped" not in capsys.readouterr().err
    finally:
        target.kill()
        target.wait()
