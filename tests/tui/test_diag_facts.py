"""Diagnostics' facts: read as BPF goes live, then every few seconds, and for the last snapshot."""

from __future__ import annotations

import io

from rich.console import Console

from bpftop.bpf.raw import MapUsage
from bpftop.bpf.stats import ProgStats
from bpftop.tui.collect.diag_facts import REFRESH_S, DiagnosticsFacts
from bpftop.tui.views.diagnostics import diagnostics
from tests.tui.demo_fixture import demo_snapshot


class _Sampler:
    """The sampler's fact readers, counting their calls."""

    def __init__(self) -> None:
        self.reads = 0
        self.runs = 0

    def map_usage(self) -> tuple[MapUsage, ...]:
        self.reads += 1
        return (MapUsage("counts0", "hash", self.reads, 100, 16, 8),)

    def prog_stats(self) -> ProgStats:
        self.runs += 1000
        return ProgStats(run_time_ns=self.runs * 50, run_count=self.runs)

    def unwind_state(self) -> None:
        return None

    def python_counts(self) -> None:
        return None


def test_read_when_live_then_when_due_and_for_the_last_snapshot() -> None:
    now = [100.0]
    facts, sampler = DiagnosticsFacts(refresh_s=5.0, clock=lambda: now[0]), _Sampler()
    before = facts.read(sampler, False, False, False)
    assert before.maps == () and sampler.reads == 0, "nothing before BPF is live"
    first = facts.read(sampler, True, False, False)
    assert first.maps[0].used == 1 and first.overhead.bpf_runs_per_s > 0
    now[0] += 4.9
    assert facts.read(sampler, True, False, False) is first and sampler.reads == 1
    now[0] += 0.1
    assert facts.read(sampler, True, False, False).maps[0].used == 2
    assert facts.read(sampler, True, True, False).maps[0].used == 3, "the last: read now"


def test_a_headless_collector_reads_only_for_its_last_snapshot() -> None:
    facts, sampler = DiagnosticsFacts(clock=lambda: 0.0), _Sampler()
    for _ in range(3):
        assert facts.read(sampler, True, False, True).maps == ()
    assert sampler.reads == 0
    assert facts.read(sampler, True, True, True).maps[0].used == 1


def test_diagnostics_says_how_old_its_facts_are() -> None:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(diagnostics(demo_snapshot()))
    screen = console.export_text()
    assert f"BPF maps (read every {REFRESH_S:.0f} s)" in screen
    assert f"Overhead (mean of the last {REFRESH_S:.0f} s)" in screen
