"""The header's second line: the rate's sparkline covers the last minute, and
what was lost is spelled out (dropped samples, failed stack reads by kind);
with -a its first line sums up the system."""

from __future__ import annotations

from dataclasses import replace

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.app.header import SPARK_CELLS, header_text, minute_of, sparkline
from bpftop.tui.model.snapshot import Phase, ProcessInfo, ThreadShare
from tests.tui.demo_fixture import demo_snapshot
from tests.tui.fake_source import FakeSource

from .helpers import BASE, SIZE, header, snapshot_of


def test_the_sparkline_covers_the_last_minute_of_ticks() -> None:
    busy_then_idle = [100.0] * 30 + [0.0] * 30  # a minute at 1 s ticks
    cells = minute_of(busy_then_idle, 1.0)
    assert len(cells) == SPARK_CELLS and cells[0] == 100.0 and cells[-1] == 0.0
    line = sparkline(cells, SPARK_CELLS)
    assert line[:6] == "█" * 6 and line[6:] == " " * 6, "the busy first half is still shown"
    assert minute_of([1.0] * 500 + [5.0] * 120, 0.5) == [5.0] * SPARK_CELLS, "120 ticks of 0.5 s"
    assert minute_of([3.0, 6.0], 1.0) == [4.5], "two ticks so far: one cell (5 s each)"
    text = header_text(demo_snapshot(), False, 1.0, busy_then_idle).plain
    assert "██████      " in text


def test_dropped_samples_and_failed_reads_by_kind_are_in_the_header() -> None:
    snap = demo_snapshot()
    text = header_text(snap, False, 1.0).plain
    assert "failed 19 (user EFAULT 17, kernel EFAULT 2)" in text
    assert "dropped" not in text, "only when there are some"
    dropped = replace(snap, stats=replace(snap.stats, dropped_samples=1234))
    assert "lost 0  dropped 1,234  failed 19" in header_text(dropped, False, 1.0).plain
    clean = replace(snap, stats=replace(snap.stats, stack_errors=()))
    assert "failed 0" in header_text(clean, False, 1.0).plain
    assert "(" not in header_text(clean, False, 1.0).plain.split("failed 0")[1][:3]


def test_all_processes_header_sums_up_the_system() -> None:
    """-a (pid 0): the system's CPU of its CPUs, memory in use, and how many
    processes and threads were sampled; never 'waiting for process information'."""
    system = ProcessInfo(
        pid=0, name="all processes", cmdline="", cpu_percent=137.5, rss_bytes=3 << 30,
        num_threads=42, alive=True, processes=7, cpus=2,
    )  # fmt: skip
    snap = replace(demo_snapshot(), process=system)
    first = header_text(snap, False, 1.0).plain.splitlines()[0]
    assert first == (
        "bpftop all processes  CPU 137.5% of 2 CPUs  mem used 3072.0 MiB  "
        "sampled 7 processes, 42 threads"
    )
    assert "pid 0" not in first and "waiting" not in first
    saved = replace(snap, phase=Phase.SAVED)  # a saved -a profile: no live numbers
    assert "CPU" not in header_text(saved, False, 1.0).plain.splitlines()[0]


async def test_an_all_processes_app_shows_the_summary() -> None:
    system = ProcessInfo(0, "all processes", "", 12.0, 1 << 30, 9, True, processes=3, cpus=4)
    source = FakeSource([replace(demo_snapshot(), process=system)])
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = header(app)
        assert "CPU 12.0% of 4 CPUs" in shown and "sampled 3 processes, 9 threads" in shown
        assert "waiting for process information" not in shown


def test_a_stopped_target_is_said_once_sampling() -> None:
    """A SIGSTOPped target (say, left held by a killed bpftop) gives no samples:
    the header says so and how to go on; not while compiling (a launched
    command is held then on purpose)."""
    snap = demo_snapshot()
    assert snap.process is not None
    stopped = replace(snap, process=replace(snap.process, stopped=True))
    pid = snap.process.pid
    assert f"STOPPED (kill -CONT {pid})" in header_text(stopped, False, 1.0).plain
    compiling = replace(stopped, phase=Phase.COMPILING)
    assert "STOPPED" not in header_text(compiling, False, 1.0).plain
    assert "STOPPED" not in header_text(snap, False, 1.0).plain


async def test_the_header_names_the_thread_shown() -> None:
    """One thread shown: the header gives its name as the Threads view does
    (Python's threading name where bpftop could read it)."""
    snap = replace(snapshot_of(BASE), threads=(ThreadShare(7, "worker-a", 5),))
    app = BpftopApp(FakeSource([snap]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "worker-a" not in header(app)
        app.select_thread(7)
        await pilot.pause()
        assert "thread 7 (worker-a)" in header(app)
