"""The early (perf_event) samples without a kernel: aggregation, the per-CPU
hand-over cut, stack-quality counts, and what the header and Diagnostics say."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import cast

from bpftop.bpf.perf_events import ExecRecord, PerfDrain, PerfSample, PerfSampler, UserRegs
from bpftop.bpf.raw import RawSample, RawTick
from bpftop.tui.app.header import header_text
from bpftop.tui.collect.counters import CollectionCounters
from bpftop.tui.collect.early import BPF_FP, EARLY_OTHER_IMAGE, EarlyFeed
from bpftop.tui.collect.early_stacks import EARLY_FP, EarlyStacks
from bpftop.tui.views.diagnostics import counters_table, verdict
from tests.tui.demo_fixture import demo_snapshot


class FakePerf:
    """What EarlyFeed uses of a PerfSampler, fed by hand."""

    sample_hz = 100
    cpus = (0, 1)

    def __init__(self) -> None:
        self.queue: list[PerfDrain] = []
        self.execs: list[ExecRecord] = []  # execs taken after a drain
        self.opened = True
        self.enabled = True

    def drain(self) -> PerfDrain:
        return self.queue.pop(0) if self.queue else PerfDrain()

    def take_execs(self) -> tuple[ExecRecord, ...]:
        taken, self.execs = tuple(self.execs), []
        return taken

    def disable(self) -> None:
        self.enabled = False

    def keep_rings_empty(self) -> None:
        pass

    def close(self) -> None:
        self.opened = False


def sample(cpu: int, time_ns: int, user: tuple[int, ...] = (0x401000, 0x401100)) -> PerfSample:
    regs = UserRegs(ip=user[0], sp=0x7FFF0000, bp=0x7FFF0010)
    return PerfSample(7, 8, cpu, time_ns, (), user, regs, b"\0" * 64)


def feed_of(fake: FakePerf) -> EarlyFeed:
    return EarlyFeed(cast(PerfSampler, fake), EarlyStacks(()))


def test_equal_stacks_are_aggregated_with_their_quality() -> None:
    fake = FakePerf()
    feed = feed_of(fake)
    try:
        fake.queue.append(
            PerfDrain((sample(0, 1), sample(1, 2), sample(0, 3, (0x402000,))), lost=4)
        )
        tick, qualities, _ = feed.tick()
    finally:
        feed.close()
    counts = {s.user_stack: s.count for s in tick.samples}
    assert counts == {(0x401000, 0x401100): 2, (0x402000,): 1}
    assert tick.lost_events == 4 and dict(qualities) == {EARLY_FP: 3}
    assert not fake.opened


def test_hand_over_keeps_each_cpu_samples_before_its_first_bpf_sample() -> None:
    fake = FakePerf()
    feed = feed_of(fake)
    fake.queue.append(PerfDrain((sample(0, 10), sample(0, 20), sample(1, 10), sample(1, 30))))
    tick, qualities, _ = feed.hand_over(lambda: {0: 15, 1: 31})
    assert tick.total_samples == 3, "cpu 0: only t=10; cpu 1: both"
    assert dict(qualities) == {EARLY_FP: 3}
    assert not fake.enabled and not fake.opened


def test_hand_over_reads_the_first_bpf_samples_after_the_last_perf_sample() -> None:
    """BPF's first sample on CPU 1 (t=25) comes after the last wait but before the
    perf events are disabled: the perf sample at t=30 is BPF's too, not kept."""
    fake = FakePerf()
    feed = feed_of(fake)
    fake.queue.append(PerfDrain((sample(0, 10), sample(1, 20), sample(1, 30))))
    tick = feed.hand_over(lambda: {0: 15} if fake.enabled else {0: 15, 1: 25}).tick
    assert tick.total_samples == 2, "cpu 0: t=10; cpu 1: t=20"


def test_without_tables_the_user_stack_is_the_frame_pointer_chain() -> None:
    stacks = EarlyStacks(())  # no targets: no tables are built
    s = sample(0, 1)
    assert stacks.user_stack(s) == (s.user_stack, EARLY_FP)


def test_counters_count_samples_by_quality() -> None:
    counters = CollectionCounters("profile:hz:99")
    counters.add(RawTick((RawSample(1, 1, (1,), (), 5),), interval_s=1), {EARLY_FP: 5})
    counters.add(RawTick((RawSample(1, 1, (1,), (), 3),), interval_s=1), {BPF_FP: 3})
    stats = counters.freeze()
    assert stats.stack_quality == ((BPF_FP, 3), (EARLY_FP, 5))
    assert stats.early_samples == 5 and stats.total_samples == 8


def test_header_and_diagnostics_name_the_qualities_only_when_early_samples_exist() -> None:
    plain = demo_snapshot()
    assert "early" not in header_text(plain, False, 1.0).plain
    mixed = replace(plain, stats=replace(plain.stats, stack_quality=((BPF_FP, 9), (EARLY_FP, 4))))
    assert "4 early (perf_event)" in header_text(mixed, False, 1.0).plain
    rows = counters_table(mixed).columns[0]._cells
    assert f"user stacks by {EARLY_FP}" in rows and f"user stacks by {BPF_FP}" in rows
    assert not any("user stacks by" in str(c) for c in counters_table(plain).columns[0]._cells)


def test_bpf_that_could_not_load_is_said_early_in_the_header_and_in_diagnostics() -> None:
    """An 80-column header cuts the line's end, where the collector's message is:
    "perf_event only" comes right after the phase, the reason in Diagnostics."""
    plain = demo_snapshot()
    problem = "cannot import BCC's Python bindings (no bcc) (apt-get install python3-bpfcc)"
    failed = replace(plain, bpf_problem=problem, message="BPF failed: cannot import BCC")
    line = header_text(failed, False, 1.0).plain.splitlines()[1]
    assert "perf_event only" in line[:30] and line.endswith("BPF failed: cannot import BCC")
    assert "perf_event only" not in header_text(plain, False, 1.0).plain
    assert f"BPF could not load, perf_event samples only: {problem}" in verdict(failed).plain
    assert "BPF could not load" not in verdict(plain).plain


def test_a_sample_waits_for_its_process_tables_and_is_left_out_if_they_never_come() -> None:
    """Until every file of the process has been tried, a sample is not walked
    (its copy is kept for a later tick); on the last tick it is left out."""

    class NotYet(EarlyStacks):
        def settled(self, tgid: int) -> bool:
            return False

    fake = FakePerf()
    feed = EarlyFeed(cast(PerfSampler, fake), NotYet(()))
    try:
        fake.queue.append(PerfDrain((sample(0, 1), sample(1, 2))))
        first = feed.tick()
        second = feed.tick()
        last = feed.tick(final=True)
    finally:
        feed.close()
    assert first.tick.total_samples == second.tick.total_samples == 0
    assert not first.left_out and not second.left_out
    assert last.tick.total_samples == 2, "final: walked with the tables there are"


def test_early_samples_of_a_process_bpf_completes_better_are_left_out_and_counted() -> None:
    fake = FakePerf()
    feed = feed_of(fake)
    python_tgid = 7  # sample() makes tgid 7's samples
    other = replace(sample(0, 3), tgid=9)
    try:
        fake.queue.append(PerfDrain((sample(0, 1), sample(1, 2), other)))
        early = feed.tick(leave_out=lambda tgid: "no frames" if tgid == python_tgid else "")
    finally:
        feed.close()
    assert early.tick.total_samples == 1 and early.tick.samples[0].tgid == 9
    assert dict(early.left_out) == {"no frames": 2}
    counters = CollectionCounters("profile:hz:99")
    counters.add(early.tick, early.qualities, early.left_out)
    stats = counters.freeze()
    assert stats.left_out == (("no frames", 2),) and stats.total_samples == 1
    snap = replace(demo_snapshot(), stats=stats)
    assert "2 early left out" in header_text(snap, False, 1.0).plain
    assert "left out: no frames" in counters_table(snap).columns[0]._cells


class Describer:
    """The collector's side of an exec: each read gets the next image number
    (counting down from -1); ``during`` runs while a read is made."""

    def __init__(self, during: Callable[[], None] = lambda: None, gone: bool = False) -> None:
        self.reads: list[int] = []
        self.during = during
        self.gone = gone

    def __call__(self, tgid: int) -> int | None:
        self.reads.append(tgid)
        self.during()
        return None if self.gone else -len(self.reads)


def kept(tick: RawTick) -> dict[int, int]:
    """image -> samples counted."""
    counts: Counter[int] = Counter()
    for s in tick.samples:
        counts[s.image] += s.count
    return dict(counts)


def test_a_process_that_execd_is_read_again_and_its_older_image_left_out() -> None:
    """Exec at t=20: the new image is read at the tick and its samples (t=30,
    t=40 later) are named by the number the read gave; the sample at t=10, of
    the image replaced before it was read, is left out and counted."""
    fake = FakePerf()
    feed = feed_of(fake)
    t = time.monotonic_ns()  # (execs a second before a drain are forgotten)
    describe = Describer()
    try:
        fake.queue.append(
            PerfDrain((sample(0, t + 10), sample(1, t + 30)), execs=(ExecRecord(7, t + 20),))
        )
        tick, _, left_out = feed.tick(describe=describe)
        fake.queue.append(PerfDrain((sample(0, t + 40), replace(sample(0, t + 41), tgid=9))))
        later = feed.tick(describe=describe).tick
    finally:
        feed.close()
    assert kept(tick) == {-1: 1} and dict(left_out) == {EARLY_OTHER_IMAGE: 1}
    assert kept(later) == {-1: 1, 0: 1}, "a process that never exec'd: image 0"
    assert describe.reads == [7], "read once per exec"


def test_an_exec_during_the_read_makes_it_count_for_no_image() -> None:
    """A second exec (t=25) comes in while the first one's image is read: that
    read is of an image unknown, so nothing is counted until the next tick reads again."""
    fake = FakePerf()
    feed = feed_of(fake)
    t = time.monotonic_ns()  # (execs a second before a drain are forgotten)
    describe = Describer(during=lambda: fake.execs.append(ExecRecord(7, t + 25)))
    try:
        fake.queue.append(
            PerfDrain((sample(0, t + 10), sample(1, t + 22)), execs=(ExecRecord(7, t + 20),))
        )
        first, _, left_first = feed.tick(describe=describe)
        describe.during = lambda: None
        fake.queue.append(PerfDrain((sample(0, t + 23), sample(1, t + 30))))
        second, _, left_second = feed.tick(describe=describe)
    finally:
        feed.close()
    assert kept(first) == {} and dict(left_first) == {EARLY_OTHER_IMAGE: 2}
    assert kept(second) == {-2: 1} and dict(left_second) == {EARLY_OTHER_IMAGE: 1}
    assert describe.reads == [7, 7]


def test_a_process_gone_before_its_new_image_was_read_counts_nothing_after_its_exec() -> None:
    fake = FakePerf()
    feed = feed_of(fake)
    t = time.monotonic_ns()  # (execs a second before a drain are forgotten)
    try:
        fake.queue.append(
            PerfDrain((sample(0, t + 10), sample(1, t + 30)), execs=(ExecRecord(7, t + 20),))
        )
        tick, _, left_out = feed.tick(describe=Describer(gone=True))
    finally:
        feed.close()
    assert kept(tick) == {} and dict(left_out) == {EARLY_OTHER_IMAGE: 2}


def test_samples_of_the_image_read_before_are_counted_by_its_number_after_the_next_exec() -> None:
    """A tick learns of a second exec (t=50): the samples of the image read at
    the tick before (t=40) are walked and named by that image's number first,
    then the new image is read for the samples after the exec (t=60)."""
    fake = FakePerf()
    feed = feed_of(fake)
    t = time.monotonic_ns()
    describe = Describer()
    try:
        fake.queue.append(PerfDrain((sample(1, t + 30),), execs=(ExecRecord(7, t + 20),)))
        first = feed.tick(describe=describe).tick
        fake.queue.append(
            PerfDrain((sample(0, t + 40), sample(1, t + 60)), execs=(ExecRecord(7, t + 50),))
        )
        second, _, left_out = feed.tick(describe=describe)
    finally:
        feed.close()
    assert kept(first) == {-1: 1}
    assert kept(second) == {-1: 1, -2: 1} and not left_out
    assert describe.reads == [7, 7]
