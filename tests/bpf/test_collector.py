"""The collector on real processes: the app's requests (thread, time mode,
reset) are applied between ticks, and unknown frames are counted by reason."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bpftop.bpf.program import CpuSampler
from bpftop.symbols import hints
from bpftop.tui.collect.collector import Collector
from bpftop.tui.model.snapshot import CallNode, Phase, Snapshot
from bpftop.tui.model.timemode import TimeMode, TimeSetting


class Watched:
    """A started collector and the snapshots it posted."""

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self.snapshots: list[Snapshot] = []
        collector.start(self.snapshots.append, on_error=lambda err: pytest.fail(str(err)))

    def wait(self, check: Callable[[Snapshot], bool], timeout_s: float) -> Snapshot:
        deadline = time.monotonic() + timeout_s
        seen = 0
        while time.monotonic() < deadline:
            for snap in self.snapshots[seen:]:
                if check(snap):
                    return snap
            seen = len(self.snapshots)
            time.sleep(0.02)
        last = self.snapshots[-1] if self.snapshots else None
        raise AssertionError(f"timed out; last: {last and (last.phase, last.time_mode)}")


@pytest.fixture
def demo(workloads: Path) -> Iterator[subprocess.Popen[bytes]]:
    target = subprocess.Popen([str(workloads / "demo"), "60"])
    yield target
    target.kill()
    target.wait()


def labels(snap: Snapshot) -> set[str]:
    return {h.label for h in snap.hot}


def tree_labels(node: CallNode) -> set[str]:
    """Every label in ``node``'s tree."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        found.add(current.label)
        stack.extend(current.children)
    return found


def test_threads_time_mode_and_reset_apply_between_ticks(demo) -> None:
    # A long tick, so an answer within a second proves requests wake the thread.
    watched = Watched(Collector(demo.pid, CpuSampler(199), interval_s=4.0))
    try:
        both = watched.wait(lambda s: len(s.threads) == 2, 20)
        names = {t.name: t for t in both.threads}
        assert set(names) == {"demo", "compressor"}, both.threads
        assert names["demo"].samples > names["compressor"].samples
        assert both.threads[0].name == "demo", "hottest thread first"

        asked = time.monotonic()
        watched.collector.select_thread(names["compressor"].tid)
        one = watched.wait(lambda s: s.time_mode.endswith(f"thread {names['compressor'].tid}"), 5)
        assert time.monotonic() - asked < 2.0, "answered before the next 4 s tick"
        worker = next(t for t in one.threads if t.name == "compressor")
        assert one.tree.total_count == worker.samples, "exactly that thread's samples"
        assert "mix_round" not in labels(one)
        assert one.stats.total_samples > one.tree.total_count, "the header still counts all"

        watched.collector.select_thread(None)
        watched.collector.set_time_mode(TimeSetting(TimeMode.WINDOW, window_s=1.0))
        window = watched.wait(lambda s: s.time_mode == "last 1s", 5)
        # The window is kept in whole ticks: once a later tick closes, the
        # earlier ones fall out of it.
        window = watched.wait(
            lambda s: s.time_mode == "last 1s" and s.tree.total_count < s.stats.total_samples, 10
        )
        assert "mix_round" in labels(window)

        before = watched.wait(lambda s: s.seq > window.seq, 10).stats.total_samples
        watched.collector.set_time_mode(TimeSetting())
        watched.collector.reset()
        after = watched.wait(lambda s: s.time_mode == "cumulative", 5)
        assert after.stats.total_samples < before
        assert after.stats.total_samples == after.tree.total_count, "both count from the reset"

        assert not any(h.source for h in after.hot), "no DWARF work until lines are asked for"
        watched.collector.show_source_lines(True)
        lined = watched.wait(lambda s: any(h.source for h in s.hot if h.label == "mix_round"), 10)
        source = next(h.source for h in lined.hot if h.label == "mix_round")
        assert source.startswith("demo.c:"), source
    finally:
        watched.collector.stop()


def test_requests_still_answered_after_the_target_exits(demo) -> None:
    sampler = CpuSampler(199)
    watched = Watched(Collector(demo.pid, sampler, interval_s=0.5))
    try:
        # The compressor thread is rarely on the CPU: let both threads be seen first.
        watched.wait(lambda s: len(s.threads) == 2, 30)
        demo.kill()
        demo.wait()
        gone = watched.wait(lambda s: s.phase is Phase.EXITED, 10)
        assert watched.collector.finished.wait(5)
        # The target may die while BCC still compiles (early samples named both
        # threads): that compile then closes what it loads when it ends.
        deadline = time.monotonic() + 60
        while sampler.loaded and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not sampler.loaded, "probes are detached once the target is gone"
        worker = next(t for t in gone.threads if t.name == "compressor")
        watched.collector.select_thread(worker.tid)
        one = watched.wait(lambda s: s.time_mode.endswith(f"thread {worker.tid}"), 5)
        assert one.phase is Phase.EXITED
        assert one.tree.total_count == worker.samples, "exactly that thread's samples"
        assert "mix_round" not in labels(one)
    finally:
        watched.collector.stop()


def test_unknown_frames_counted_by_reason_with_a_hint(workloads: Path, tmp_path: Path) -> None:
    stripped = tmp_path / "split-stripped"
    shutil.copy(workloads / "split", stripped)
    subprocess.run(["strip", "-s", str(stripped)], check=True)
    target = subprocess.Popen([str(stripped), "30"])
    watched = Watched(Collector(target.pid, CpuSampler(199), interval_s=0.5))
    try:
        snap = watched.wait(lambda s: s.stats.total_samples > 200, 20)
        shares = {u.reason: u for u in snap.unknown}
        share = shares["no symbols in file (split-stripped)"]
        assert share.samples > 0.9 * snap.stats.total_samples, snap.unknown
        assert "no debug file was found" in share.hint and "split-stripped" in share.hint
        assert any(h.label.startswith("split-stripped+0x") for h in snap.hot)
    finally:
        watched.collector.stop()
        target.kill()
        target.wait()


def test_headless_ticks_carry_no_tree_and_the_last_snapshot_has_everything(demo) -> None:
    # record reads only the snapshot posted as collection ends: the ticks before
    # skip the tree's copies, and the last one counts every sample.
    collector = Collector(demo.pid, CpuSampler(199), interval_s=0.3)
    collector.headless = True
    watched = Watched(collector)
    try:
        ticking = watched.wait(lambda s: s.stats.total_samples > 50, 30)
        assert ticking.tree.total_count == 0 and ticking.hot == ()
    finally:
        collector.stop()
    last = collector.last
    assert last is not None and last is watched.snapshots[-1]
    assert last.tree.total_count == last.stats.total_samples > 50
    assert "mix_round" in labels(last)


def test_headless_ticks_look_up_no_debug_packages(
    workloads: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # record shows no unknown-frame hints: it must not run dpkg and apt-cache
    # for them (~1 CPU-s at start-up on a python3 target).
    looked_up: list[str] = []
    monkeypatch.setattr(hints, "debug_package_for", looked_up.append)
    stripped = tmp_path / "split-stripped"
    shutil.copy(workloads / "split", stripped)
    subprocess.run(["strip", "-s", str(stripped)], check=True)
    target = subprocess.Popen([str(stripped), "30"])
    collector = Collector(target.pid, CpuSampler(199), interval_s=0.3)
    collector.headless = True
    watched = Watched(collector)
    try:
        watched.wait(lambda s: s.stats.total_samples > 200, 20)
    finally:
        collector.stop()
        target.kill()
        target.wait()
    last = collector.last
    assert last is not None and any(h.label.startswith("split-stripped+0x") for h in last.hot)
    assert looked_up == [] and all(s.unknown == () for s in watched.snapshots)


def test_the_fallback_headers_notice_stays_in_every_snapshot(demo) -> None:
    # This kernel has no headers of its own: BPF is compiled against Debian's, and
    # every snapshot says so (Diagnostics lists it) for as long as it samples, not
    # for one tick; until BPF is loaded, snapshots say it is still loading.
    watched = Watched(Collector(demo.pid, CpuSampler(99), interval_s=0.2))

    def notice(snap: Snapshot) -> bool:
        return any("no headers for kernel" in n for n in snap.notices)

    try:
        first = watched.wait(notice, 60)
        watched.wait(lambda s: s.seq >= first.seq + 3, 10)
    finally:
        watched.collector.stop()
    later = [s for s in watched.snapshots if s.seq >= first.seq]
    assert len(later) >= 4 and all(notice(s) and not s.bpf_loading for s in later)
    assert all("no headers for kernel" not in s.message for s in later)
    assert watched.snapshots[0].bpf_loading
