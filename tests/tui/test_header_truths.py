"""What the header says is true: the rate is a probe's count over real elapsed
time (per probe, its sparkline too), hits are called hits, the cost waits for
BPF, the probe is named once and the cost is never cut off at 80 columns, and
standing notices go to Diagnostics with one notification."""

from __future__ import annotations

from dataclasses import replace

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.app.header import RateHistory, header_text, real_rate
from bpftop.tui.model.snapshot import CollectionStats
from bpftop.tui.views.diagnostics import DiagnosticsView
from tests.tui.demo_fixture import demo_snapshot
from tests.tui.fake_source import FakeSource

from .helpers import SIZE, header, notifications

HEADERS = "no headers for kernel 6.18.0: compiled with linux-headers-6.1.0-28 headers"


def stats(probe: str, elapsed_s: float, total: int) -> CollectionStats:
    return CollectionStats(probe=probe, elapsed_s=elapsed_s, total_samples=total, samples_per_s=1e4)


def test_the_rate_is_samples_over_real_elapsed_time() -> None:
    assert real_rate([(0.0, 0)]) is None
    assert real_rate([(0.0, 0), (0.5, 48)]) == 96.0  # the first tick: since counting began
    steady = [(0.0, 0), *((t + 0.5, 99 * t + 48) for t in range(1, 12))]
    assert real_rate(steady) == 99.0  # over the last 5 s
    history = RateHistory()
    history.add(stats("profile:hz:99", 0.6, 55))  # early samples handed over at once
    history.add(stats("profile:hz:99", 0.7, 120))  # (the tick's own rate: 650/s)
    rates, rate = history.of("profile:hz:99")
    assert rate is not None and 150 < rate < 175 and len(rates) == 2


def test_each_probe_has_its_own_rate_and_sparkline() -> None:
    history = RateHistory()
    for t in range(1, 4):
        history.add(stats("profile:hz:99", t, 99 * t))
    history.add(stats("tracepoint:sched:sched_switch", 4.0, 4000))  # a new probe's counters
    assert history.of("tracepoint:sched:sched_switch") == ((1000.0,), 1000.0)
    assert history.of("profile:hz:99") == ((99.0, 99.0, 99.0), 99.0)
    history.add(stats("profile:hz:99", 9.0, 300))  # back: 6 s it was not attached
    assert history.of("profile:hz:99")[1] is None, "no rate until it has counted a tick"
    history.add(stats("profile:hz:99", 10.0, 399))
    assert history.of("profile:hz:99")[1] == 99.0
    history.add(stats("profile:hz:99", 0.5, 40))  # reset: counting began again
    assert history.of("profile:hz:99")[1] == 80.0


def test_hits_are_not_called_samples() -> None:
    snap = demo_snapshot()
    for probe, word in (
        ("tracepoint:sched:sched_switch", "hits"),
        ("usdt:/usr/bin/python3.11:python:gc__done", "hits"),
        ("uprobe:c:malloc", "calls"),
        ("profile:hz:99", "samples"),
        ("software:page-faults:1", "page-faults"),
    ):
        probed = replace(snap, stats=replace(snap.stats, probe=probe))
        assert f"{snap.stats.total_samples:,} {word}  " in header_text(probed, False, 1.0).plain


def test_the_cost_waits_for_bpf_and_is_never_cut_off() -> None:
    loading = replace(demo_snapshot(), bpf_loading=True)
    line = header_text(loading, False, 1.0).plain.splitlines()[2]
    assert "cost starting BPF…" in line and "%" not in line
    probes = ("profile:hz:99", "uprobe:c:malloc", "tracepoint:sched:sched_switch", "offcpu")
    switched = replace(
        demo_snapshot(),
        probes=probes,
        probe_message="probe profile:hz:99",
        stats=replace(demo_snapshot().stats, probe="profile:hz:99"),
    )
    line = header_text(switched, False, 1.0).plain.splitlines()[2]
    assert line.count("profile:hz:99") == 1, line
    assert "cost CPU 1.8% BPF 0.41ms/s" in line[:78], "in an 80-column header"
    assert "also: uprobe:c:malloc tracepoint:sched:sched_switch offcpu" in line
    refused = replace(switched, probe_message="probe not changed: no such function")
    assert "probe not changed: no such function" in header_text(refused, False, 1.0).plain


async def test_a_standing_notice_is_said_once_and_kept_in_diagnostics() -> None:
    snap = replace(demo_snapshot(), notices=(HEADERS,))
    source = FakeSource([snap])
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        source.push(replace(snap, seq=2))
        await pilot.pause()
        said = [n for n in notifications(app) if HEADERS in n.message]
        assert len(said) == 1
        assert HEADERS not in header(app)
        await pilot.press("5")
        diag = app.query_one("#diag", DiagnosticsView)
        lines = [diag.render_line(y).text for y in range(diag.size.height)]
        assert any(f"Note: {HEADERS}" in line for line in lines)


def test_a_target_that_leaves_its_work_to_children_suggests_following_them() -> None:
    snap = demo_snapshot()
    assert snap.process is not None
    idle = replace(snap.process, cpu_percent=0.3, children=1)
    first = header_text(replace(snap, process=idle), False, 1.0).plain.splitlines()[0]
    assert "its 1 child process run unprofiled: --children" in first
    many = header_text(replace(snap, process=replace(idle, children=3)), False, 1.0).plain
    assert "its 3 child processes run unprofiled" in many
    busy = replace(idle, cpu_percent=97.0)  # the parent works itself: its samples say so
    assert "--children" not in header_text(replace(snap, process=busy), False, 1.0).plain
    gone = replace(idle, alive=False)
    assert "--children" not in header_text(replace(snap, process=gone), False, 1.0).plain
