"""The collector switches probes live: no recompile, one profile per probe
(each taking the current time mode and thread), and a rejected spec leaves
the running probe counting."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bpftop.bpf.probes import parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.tui.collect.collector import Collector
from bpftop.tui.model.timemode import TimeMode, TimeSetting
from tests.bpf.test_collector import Watched, labels


def test_switching_keeps_one_profile_per_probe(workloads: Path) -> None:
    probed = workloads / "probed"
    target = subprocess.Popen([str(probed), "latency", "5000", "go"])  # ~20 s
    first = f"uprobe:{probed}:slow_path"
    latency = f"uretprobe:{probed}:timed"
    sampler = CpuSampler(99, probe=parse_spec(first))
    watched = Watched(Collector(target.pid, sampler, interval_s=0.3))
    try:
        counting = watched.wait(lambda s: s.stats.total_samples >= 20, 30)
        assert counting.probes == (first,) and counting.weight_unit == ""
        assert "slow_path" in labels(counting) and "timed" not in labels(counting)

        watched.collector.switch_probe(latency)
        timed = watched.wait(lambda s: s.stats.probe == latency and s.probe_events >= 20, 10)
        assert timed.probes == (first, latency)
        assert timed.weight_unit == "ns" and timed.probe_message == f"probe {latency}"
        hot = {h.label: h for h in timed.hot}
        # Weighted by time: timed() is 3 ms under slow_path, 1 ms under fast_path.
        assert hot["timed"].self_count >= timed.probe_events * 1_000_000
        assert hot["slow_path"].total_count > 1.5 * hot["fast_path"].total_count
        left_at = watched.snapshots[-1].seq

        watched.collector.switch_probe(f"uprobe:{probed}:no_such_fn")
        rejected = watched.wait(lambda s: s.seq > left_at and "not changed" in s.probe_message, 10)
        assert "no function 'no_such_fn'" in rejected.probe_message
        assert rejected.stats.probe == latency
        still = watched.wait(
            lambda s: s.seq > rejected.seq and s.probe_events > rejected.probe_events + 10, 10
        )
        assert still.stats.probe == latency

        watched.collector.set_time_mode(TimeSetting(TimeMode.WINDOW))
        watched.collector.select_thread(target.pid)
        shown = watched.wait(lambda s: s.seq > still.seq and "thread" in s.time_mode, 10)
        assert shown.time_mode == f"last 30s, thread {target.pid}"
        before = counting.stats.total_samples
        watched.collector.switch_probe(first)
        back = watched.wait(lambda s: s.seq > shown.seq and s.stats.probe == first, 10)
        assert back.stats.total_samples >= before, "the first probe's profile was kept"
        assert back.time_mode == shown.time_mode, "a re-used probe takes the mode and thread"
        assert "timed" not in labels(back)
    finally:
        watched.collector.stop()
        target.kill()
        target.wait()
