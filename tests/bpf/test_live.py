"""The live view on a real process: the real collector feeding the real app."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from pathlib import Path

from bpftop.bpf.program import CpuSampler
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.collect.collector import Collector
from bpftop.tui.model.snapshot import Phase, Snapshot


async def wait_for(app: BpftopApp, check: Callable[[Snapshot], bool], timeout_s: float) -> Snapshot:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        if app.shown is not None and check(app.shown):
            return app.shown
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out; last shown: {app.shown and app.shown.phase}")


async def test_live_view_shows_hot_functions_and_keeps_them_after_exit(workloads: Path) -> None:
    target = subprocess.Popen([str(workloads / "split"), "120"])  # ended below, once seen
    sampler = CpuSampler(199)
    app = BpftopApp(Collector(target.pid, sampler, interval_s=0.5))
    try:
        async with app.run_test(size=(120, 36)):
            first = await wait_for(app, lambda s: True, 5)
            # Before BCC compiled: says so, or shows the early sampler's first tick (it
            # comes at once: perf_event's samples since launch, none yet at times), all
            # of them early ones; or, the program image warm, BPF is up first (its maps).
            assert first.phase in (Phase.COMPILING, Phase.SAMPLING), first
            stats = first.stats
            before_bpf = first.bpf_loading and stats.total_samples == stats.early_samples
            assert before_bpf or bool(first.maps), first
            # perf_event samples fill the view while BCC compiles (or BPF's, loaded first) ...
            early = await wait_for(app, lambda s: any(h.label == "hot_a" for h in s.hot), 20)
            assert early.stats.early_samples > 0 or early.maps
            # ... and BPF takes over once loaded (its maps and run stats appear).
            live = await wait_for(
                app, lambda s: bool(s.maps) and s.overhead.bpf_runs_per_s > 100, 120
            )
            assert live.hot[0].label == "hot_a" and live.process is not None
            assert live.process.name == "split" and live.process.alive
            assert live.stats.total_samples > 0 and live.stats.probe == "profile:hz:199"
            maps = {m.name: m for m in live.maps}
            assert maps["stacks0"].kind == "stack_trace" and maps["targets"].used == 1
            assert "ustacks1" in maps or "unwind_rows" not in maps, "every map, the walker's too"
            # The overhead meter sees our program run about 199 times a second per busy CPU.
            assert live.overhead.bpf_runs_per_s > 100 and live.overhead.bpf_run_ns_per_s > 0
            target.terminate()
            target.wait(timeout=20)
            done = await wait_for(app, lambda s: s.phase is Phase.EXITED, 10)
            assert done.process is not None and not done.process.alive
            assert done.stats.total_samples >= live.stats.total_samples
            assert any(h.label == "hot_a" for h in done.hot), "what was collected stays"
            assert app.error is None
    finally:
        target.kill()
        target.wait()
    assert not sampler.loaded, "leaving the app detached every probe"
