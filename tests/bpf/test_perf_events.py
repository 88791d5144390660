"""The compile-free perf_event sampler on the real kernel: counts, stacks, filtering, losses."""

from __future__ import annotations

import bisect
import itertools
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpftop.bpf.perf_events import PerfSample, PerfSampler, split_callchain
from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.collect.early_stacks import EARLY_WALKED, EarlyStacks
from tests.bpf.test_early import allowed
from tests.bpf.test_usdt import mapped


def cpu_s(pid: int) -> float:
    """CPU time (user + system) a process has used, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def chain(workloads: Path) -> Iterator[subprocess.Popen[bytes]]:
    target = subprocess.Popen([str(workloads / "chain"), "60"])
    yield target
    target.kill()
    target.wait()


def test_samples_a_spinning_target_at_the_rate_of_its_cpu_time(chain) -> None:
    hz, seconds = 99, 3.0
    with PerfSampler(hz, targets=[chain.pid]) as perf:
        perf.open()
        before = cpu_s(chain.pid)
        started_ns = time.monotonic_ns()
        perf.enable()
        ran_from = time.monotonic()
        samples: list[PerfSample] = []
        lost = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(0.1)
            drained = perf.drain()
            samples += drained.samples
            lost += drained.lost
        perf.disable()
        used = cpu_s(chain.pid) - before
        share = used / (time.monotonic() - ran_from)
        cpus = perf.cpus
        drained = perf.drain()
        samples += drained.samples
    expected = hz * used
    # cpu_s reads clock ticks (10 ms): a little more slack than allowed()'s 2%.
    slack = allowed(expected, share) + 0.03 * expected
    assert abs(len(samples) - expected) <= slack, f"{len(samples)} vs ~{expected}"
    assert lost == 0
    assert {s.tgid for s in samples} == {chain.pid}, "nothing of other processes is kept"
    assert all(started_ns <= s.time_ns <= time.monotonic_ns() for s in samples), "CLOCK_MONOTONIC"
    assert all(s.cpu in cpus for s in samples)
    user_mode = [s for s in samples if not s.kernel_stack]
    assert user_mode and all(s.regs is not None and s.stack_bytes for s in user_mode)
    assert all(s.regs.ip == s.user_stack[0] for s in user_mode if s.regs is not None)


def test_frame_pointer_chain_names_the_callers(chain) -> None:
    with PerfSampler(99, targets=[chain.pid]) as perf:
        perf.open()
        perf.enable()
        time.sleep(1.5)
        samples = perf.drain().samples
    symbolizer = Symbolizer()
    names: list[list[str]] = []
    for s in samples[:40]:
        frames = symbolizer.user_frames(s.tgid, s.user_stack)
        names.append([f.function or "" for f in frames])
    full = [n for n in names if {"main", "run", "a"} <= set(n)]
    assert len(full) >= 0.9 * len(names), names[:5]
    assert any("c" in n for n in full)


def test_every_process_or_none(chain) -> None:
    with PerfSampler(99, all_processes=True) as perf:
        perf.open()
        perf.enable()
        time.sleep(0.5)
        everyone = perf.drain().samples
        perf.set_targets([])
        perf.all_processes = False
        time.sleep(0.3)
        nobody = perf.drain().samples
    assert chain.pid in {s.tgid for s in everyone}
    assert 0 not in {s.tgid for s in everyone}, "idle is not a process"
    assert nobody == ()


def spin(seconds: float) -> None:
    """Keep this CPU busy, so every sample period has a sample to record."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        pass


def test_a_full_ring_counts_what_it_lost(chain) -> None:
    # A ring with room for one record and no drain while this process spins: the
    # kernel drops records, and the next drain counts them.
    with PerfSampler(999, all_processes=True, ring_pages=8) as perf:
        perf.open()
        perf.enable()
        spin(0.5)
        first = perf.drain()
        perf.close()
        assert not perf.opened
    assert first.lost > 0, "the loss is counted by the drain after it"
    assert first.samples, "what fitted is still read"


def test_a_ring_full_until_its_last_drain_still_counts_its_loss(chain) -> None:
    """The kernel reports a loss in the ring only before the next record that
    fits; a ring disabled while full (the hand-over to BPF, the end of a run)
    never gets one, so the loss is read from the event's own count."""
    with PerfSampler(999, all_processes=True, ring_pages=8) as perf:
        perf.open()
        perf.enable()
        spin(0.5)
        perf.disable()
        last = perf.drain()
        assert perf.drain().lost == 0, "counted once"
    assert last.lost > 0
    assert last.samples


def test_copies_beyond_the_budget_are_dropped_and_counted(chain) -> None:
    with PerfSampler(99, targets=[chain.pid], stack_budget_bytes=4096) as perf:
        perf.open()
        perf.enable()
        time.sleep(1.0)
        drained = perf.drain()
    copied = sum(len(s.stack_bytes) for s in drained.samples)
    assert copied <= 4096
    assert drained.copies_dropped > 0
    assert drained.copies_dropped + sum(1 for s in drained.samples if s.stack_bytes) == len(
        [s for s in drained.samples if s.regs is not None]
    )


def test_split_callchain() -> None:
    kernel, user = 2**64 - 128, 2**64 - 512
    assert split_callchain([kernel, 1, 2, user, 3, 4]) == ((1, 2), (3, 4))
    assert split_callchain([user, 5]) == ((), (5,))
    assert split_callchain([7]) == ((), ())


def test_early_stacks_of_a_build_without_frame_pointers_reach_main(workloads: Path) -> None:
    # chain_nofp has no frame pointers: the kernel's chain stops after a frame
    # or two, the user-space .eh_frame walk of the copied stack reaches main.
    target = subprocess.Popen([str(workloads / "chain_nofp"), "60"])
    try:
        # Right after the fork the maps are the test process's, and the exec
        # switches /proc/PID/exe before it maps the binary: wait for libc.
        mapped(target.pid, "libc.so")
        stacks = EarlyStacks([])
        stacks.tables.build_missing(target.pid)  # as the builder thread would, but now
        with PerfSampler(99, targets=[target.pid]) as perf:
            perf.open()
            perf.enable()
            time.sleep(2.0)
            samples = perf.drain().samples
        symbolizer = Symbolizer()
        made = [m for s in samples if (m := stacks.user_stack(s, final=True)) is not None]
        assert len(made) == len(samples)
        names = [{f.function for f in symbolizer.user_frames(target.pid, user)} for user, _ in made]
        fp_names = [
            {f.function for f in symbolizer.user_frames(target.pid, s.user_stack)} for s in samples
        ]
    finally:
        target.kill()
        target.wait()
    assert len(samples) >= 100
    walked = [q for _, q in made].count(EARLY_WALKED)
    assert walked >= 0.9 * len(samples), [q for _, q in made][:5]
    assert sum("main" in n for n in names) >= 0.9 * len(samples)
    assert sum("main" in n for n in fp_names) < 0.5 * len(samples), "the chain alone would not"


def test_each_exec_of_a_target_is_told_with_its_time_between_its_samples(
    workloads: Path,
) -> None:
    """reexec 5 100: six images of 100 ms. The exec records give 5 execs of the
    target, in its pid, and cut its samples into six runs of about 100 ms
    (each sample after an exec is of the new image: its records are in hand
    with the samples, taken after them)."""
    target = subprocess.Popen(
        [str(workloads / "reexec"), "5", "100"], stdin=subprocess.PIPE,
        env={**os.environ, "REEXEC_WAIT": "1"},
    )  # fmt: skip
    assert target.stdin is not None
    try:
        with PerfSampler(499, targets=[target.pid]) as perf:
            perf.open()
            perf.enable()
            target.stdin.write(b"x")
            target.stdin.close()
            assert target.wait(timeout=30) == 0
            drained = perf.drain()
            assert perf.take_execs() == (), "the drain took every exec record"
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()
    assert {e.tgid for e in drained.execs} == {target.pid}
    times = sorted(e.time_ns for e in drained.execs)
    assert len(times) == 5 and perf.execs_lost == 0, drained.execs
    gaps_ms = [(b - a) / 1e6 for a, b in itertools.pairwise(times)]
    assert all(90 <= gap <= 200 for gap in gaps_ms), gaps_ms
    per_image = Counter(bisect.bisect_left(times, s.time_ns) for s in drained.samples)
    assert sorted(per_image) == list(range(6)), per_image
    assert all(n >= 25 for n in per_image.values()), per_image  # ~50 at 499 Hz


def test_a_targets_exec_is_told_at_once_not_at_the_next_take(workloads: Path) -> None:
    """With the rings taken once a second, each of reexec's 5 execs (100 ms
    apart) is still told within 200 ms: the exec ring wakes the ring thread."""
    target = subprocess.Popen(
        [str(workloads / "reexec"), "5", "100"], stdin=subprocess.PIPE,
        env={**os.environ, "REEXEC_WAIT": "1"},
    )  # fmt: skip
    assert target.stdin is not None
    told: list[int] = []
    try:
        with PerfSampler(99, targets=[target.pid]) as perf:
            perf.on_exec = lambda: told.append(time.monotonic_ns())
            perf.open()
            perf.enable()
            perf.keep_rings_empty(every_s=1.0)
            target.stdin.write(b"x")
            target.stdin.close()
            assert target.wait(timeout=30) == 0
            time.sleep(0.3)
            execs = perf.drain().execs
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()
    assert len(execs) == 5, execs
    for record in execs:
        after = [ns for ns in told if ns >= record.time_ns]
        assert after and after[0] - record.time_ns <= 200_000_000, (record, told)
