"""How BPF user stacks were made, per tick, and what the header and Diagnostics
say when the .eh_frame walker could not start on a probe's samples."""

from __future__ import annotations

from dataclasses import replace

from bpftop.bpf.raw import RawSample, RawTick
from bpftop.tui.app.header import header_text
from bpftop.tui.collect.counters import CollectionCounters
from bpftop.tui.collect.early import BPF_FP, BPF_WALKER, BPF_WALKER_NOT_STARTED, bpf_qualities
from bpftop.tui.views.diagnostics import counters_table, verdict
from tests.tui.demo_fixture import demo_snapshot


def _tick(walked: int) -> RawTick:
    samples = (
        RawSample(1, 1, (1, 2), (), 7),
        RawSample(1, 2, (3,), (), 5),
        RawSample(1, 3, (), (), 2, user_error="EFAULT"),
    )
    return RawTick(samples, interval_s=1, walked_samples=walked)


def test_without_the_walker_every_stack_is_frame_pointers() -> None:
    assert bpf_qualities(_tick(0), walker=False) == {BPF_FP: 14}


def test_stacks_read_by_get_stackid_while_the_walker_is_on_had_walker_not_started() -> None:
    assert bpf_qualities(_tick(12), walker=True) == {BPF_WALKER: 14, BPF_WALKER_NOT_STARTED: 0}
    # 7 walked; 5 read by bpf_get_stackid; 2 unreadable (the walker's own error).
    assert bpf_qualities(_tick(7), walker=True) == {BPF_WALKER: 9, BPF_WALKER_NOT_STARTED: 5}


def test_header_and_diagnostics_say_when_user_registers_were_missing() -> None:
    plain = demo_snapshot()
    assert "walker not started" not in header_text(plain, False, 1.0).plain
    assert "could not start" not in verdict(plain).plain
    counters = CollectionCounters("tracepoint:sched:sched_switch")
    counters.add(_tick(7), bpf_qualities(_tick(7), walker=True))
    missing = replace(
        plain, stats=replace(plain.stats, stack_quality=counters.freeze().stack_quality)
    )
    assert missing.stats.walker_not_started == 5
    assert "5 fp stacks (walker not started)" in header_text(missing, False, 1.0).plain
    assert "5 user stacks by frame pointers: the .eh_frame walker could not start" in (
        verdict(missing).plain
    )
    rows = counters_table(missing).columns[0]._cells
    assert (
        f"user stacks by {BPF_WALKER_NOT_STARTED}" in rows
        and f"user stacks by {BPF_WALKER}" in rows
    )
