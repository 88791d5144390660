"""After every way bpftop ends, nothing of ours stays in the kernel.

Each test takes the BPF program ids and perf events the bpftop process (or,
in-process, this test process) holds while it runs, ends it one way, and
checks that none of those programs is loaded any more, no perf event is held
and no uprobe_events line names our workload. Only our own resources are
looked at: other programs on the machine are none of our business.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bpftop.base.errors import BpftopError
from bpftop.bpf.probes import parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.raw import RawTick
from bpftop.tui.collect.collector import Collector
from tests.bpf.kernel_objects import Held, held_by, prog_loaded, uprobe_events_of
from tests.conftest import BPFTOP

HANDLER_PROGRAMS = 14  # every handler is loaded at start (bpftop.bpf.c)


@pytest.fixture
def target(workloads: Path) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([str(workloads / "probed"), "latency", "100000", "go"])
    yield proc
    proc.kill()
    proc.wait()


def wait_held(pid: int, check: Callable[[Held], bool], timeout_s: float = 60) -> Held:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        held = held_by(pid)
        if check(held):
            return held
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never held its probes: {held_by(pid)}")


def probing(held: Held) -> bool:
    """All handlers loaded, the exit tracepoint and the uprobe attached."""
    return len(held.prog_ids) >= HANDLER_PROGRAMS and held.perf_events >= 2


def assert_gone(held: Held, pid: int, release_s: float = 5.0) -> None:
    """Every program ``pid`` held is unloaded (within ``release_s``: the kernel
    frees tail-call targets when it clears their program arrays, on a work
    queue after the last fd closed) and no uprobe event of it is left."""
    deadline = time.monotonic() + release_s
    left = sorted(p for p in held.prog_ids if prog_loaded(p))
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if prog_loaded(p)]
    assert not left, f"BPF programs still loaded: {left}"
    assert not uprobe_events_of(pid)


def spec(workloads: Path) -> str:
    return f"uprobe:{workloads / 'probed'}:slow_path"


def record_until(end: Callable[[subprocess.Popen[str]], object], target, out: Path) -> None:
    """Run `bpftop record` on ``target`` until ``end`` ends it; check it cleaned up."""
    workloads = Path(target.args[0]).parent
    cmd = [str(BPFTOP), "record", "-p", str(target.pid), "-o", str(out), "--probe", spec(workloads)]
    bpftop = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        held = wait_held(bpftop.pid, probing)
        time.sleep(0.5)
        end(bpftop)
        _, err = bpftop.communicate(timeout=30)
    finally:
        bpftop.kill()
    assert bpftop.returncode == 0, err
    assert_gone(held, bpftop.pid)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_record_cleans_up_on_signals(sig: int, target, tmp_path: Path) -> None:
    out = tmp_path / "out.folded"
    record_until(lambda bpftop: bpftop.send_signal(sig), target, out)
    assert "slow_path" in out.read_text(), "what was collected is written"


def test_record_cleans_up_when_the_target_dies(target, tmp_path: Path) -> None:
    record_until(lambda _: target.kill(), target, tmp_path / "out.folded")


@pytest.mark.parametrize(
    "key", [b"q", b"\x03", signal.SIGTERM, signal.SIGHUP], ids=["q", "ctrl-c", "TERM", "HUP"]
)
def test_live_view_cleans_up_on_quit_keys(key: bytes | int, target, workloads: Path) -> None:
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    cmd = [str(BPFTOP), "-p", str(target.pid), "--probe", spec(workloads)]
    bpftop = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    reader = threading.Thread(target=_drain, args=(master,), daemon=True)
    reader.start()
    try:
        held = wait_held(bpftop.pid, probing)
        time.sleep(1.0)  # the app is up and drawing
        if isinstance(key, bytes):
            os.write(master, key)
        else:
            bpftop.send_signal(key)
        assert bpftop.wait(timeout=30) == 0
    finally:
        bpftop.kill()
        bpftop.wait()
        os.close(master)
    assert_gone(held, bpftop.pid)


def _drain(fd: int) -> None:
    """Read the terminal's output so the app never blocks writing to it."""
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass


class FailingSampler(CpuSampler):
    """A real sampler whose third drain raises, as a bug in the collector path would."""

    drains = 0

    def drain(self) -> RawTick:
        self.drains += 1
        if self.drains == 3:
            raise RuntimeError("injected failure")
        return super().drain()


def test_collector_exception_detaches_everything(target, workloads: Path) -> None:
    before = held_by(os.getpid())
    sampler = FailingSampler(99, probe=parse_spec(spec(workloads)))
    errors: list[BpftopError] = []
    collector = Collector(target.pid, sampler, interval_s=0.2)
    collector.start(lambda _: None, errors.append)
    try:
        during = wait_held(os.getpid(), lambda h: len(h.prog_ids - before.prog_ids) >= 14)
        assert collector.finished.wait(30)
        assert errors and "injected failure" in str(errors[0])
        after = held_by(os.getpid())
    finally:
        collector.stop()
    assert after.perf_events == before.perf_events, "every perf event of ours was closed"
    ours = Held(during.prog_ids - before.prog_ids, 0)
    assert_gone(ours, os.getpid())
