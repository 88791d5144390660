"""Benchmark of the live view at profiler scale, on a synthetic snapshot source.

A universe of 50,000 distinct stacks (depth 20-60, sharing realistic prefixes)
is loaded once; then every tick adds 5,000 stack samples drawn from it with a
skewed (Zipf-like) distribution. Measured:

- per tick: model update (``TimedProfile.add`` x 5,000 + freeze of tree and
  hot table, on the collector thread in real use; wall time and the thread's
  CPU time, which is what the target is judged by on a busy machine) and render
  (``app.show`` + the frame composed; CPU time of the app's thread, which
  excludes the test pilot's fixed sleeps and the worker threads that build
  the callers and filtered trees) at 200x50;
- key press to redraw (the app thread's CPU time, same reason), for the keys
  users press most, in every view; the harness floor on a tiny profile too;
- memory (RSS) over N simulated minutes of 1 s ticks, model only, per mode.

``--gc-tune`` applies the CLI's ``tune_gc`` (what ``bpftop`` runs with):
without it, full collections over the 50,000 stacks' frames cost up to
seconds now and then.

"model + render" per tick adds the model's CPU time and the app thread's.
In window mode the bench's first window expiry takes back the
whole 50,000-stack universe at once (it is loaded as one tick): one slow tick.

Run: ``.venv/bin/python -m bench.tui_bench [--ticks 60] [--minutes 30] [--gc-tune]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import time
from collections.abc import Callable

import psutil

from bpftop.symbols.frame import Frame
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.cli.gc_tuning import tune_gc
from bpftop.tui.model.snapshot import CollectionStats, Phase, Snapshot
from bpftop.tui.model.timemode import TimedProfile, TimeMode, TimeSetting
from tests.tui.fake_source import FakeSource

DISTINCT = 50_000
PER_TICK = 5_000
SIZE = (200, 50)
Stack = tuple[Frame, ...]


def make_universe(seed: int = 7) -> list[Stack]:
    """50,000 distinct stacks: 400 shared trunks (depth 15-40) + varied tails."""
    rng = random.Random(seed)
    libs = ["/usr/lib/libc.so.6", "/opt/app/bin/app", "/usr/lib/libssl.so.3", "[kernel]"]
    funcs = [Frame(f"fn_{i}", libs[i % 4], 0, kernel=i % 4 == 3) for i in range(3_000)]
    trunks = [
        tuple(funcs[rng.randrange(600)] for _ in range(rng.randint(15, 40))) for _ in range(400)
    ]
    seen: set[tuple[int, ...]] = set()
    universe: list[Stack] = []
    while len(universe) < DISTINCT:
        trunk = rng.randrange(len(trunks))
        depth = rng.randint(20, 60)
        tail_len = max(1, depth - len(trunks[trunk]))
        tail = tuple(rng.randrange(600, 3_000) for _ in range(tail_len))
        if (trunk, *tail) in seen:
            continue
        seen.add((trunk, *tail))
        universe.append(trunks[trunk] + tuple(funcs[i] for i in tail))
    return universe


class Ticker:
    """Feeds a TimedProfile tick by tick and freezes snapshots, as the collector does."""

    per_tick = PER_TICK

    def __init__(self, universe: list[Stack], setting: TimeSetting) -> None:
        self.universe = universe
        self.profile = TimedProfile(setting)
        self.rng = random.Random(11)
        self.seq = 0
        weights = [1.0 / (i + 1) ** 0.8 for i in range(len(universe))]
        self.cumulative_weights = list(_accumulate(weights))
        for stack in universe:
            self.profile.add("app", stack, 1)
        self.profile.end_tick(1.0)

    def tick(self) -> tuple[Snapshot, float, float]:
        """The next snapshot, and the model's cost of making it in ms (wall, and
        this thread's CPU: on a busy machine wall time counts other processes).
        The synthetic source's random draws are not the model's cost."""
        weights = self.cumulative_weights
        picks = self.rng.choices(self.universe, cum_weights=weights, k=self.per_tick)
        t0, c0 = time.perf_counter(), time.thread_time()
        for stack in picks:
            self.profile.add("app", stack, 1)
        self.profile.end_tick(1.0)
        snap = self.freeze()
        return snap, 1e3 * (time.perf_counter() - t0), 1e3 * (time.thread_time() - c0)

    def freeze(self) -> Snapshot:
        self.seq += 1
        current = self.profile.current
        stats = CollectionStats("bench", float(self.seq), current.total_samples, self.per_tick)
        return Snapshot(
            seq=self.seq,
            phase=Phase.SAMPLING,
            stats=stats,
            tree=current.tree(),
            hot=current.hot_functions(500),
            time_mode=self.profile.setting.label,
        )


def _accumulate(values: list[float]) -> list[float]:
    total = 0.0
    out = []
    for v in values:
        total += v
        out.append(total)
    return out


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(name: str, values_ms: list[float]) -> None:
    print(
        f"{name:<34} n={len(values_ms):<4} median {statistics.median(values_ms):7.1f} ms"
        f"   p99 {p(values_ms, 0.99):7.1f} ms   max {max(values_ms):7.1f} ms"
    )


async def measure_app(ticker: Ticker, ticks: int) -> None:
    source = FakeSource()
    app = BpftopApp(source, 1.0)
    model_ms: list[float] = []
    model_cpu_ms: list[float] = []
    render_ms: list[float] = []
    total_ms: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e")
        for _ in range(ticks):
            snap, ms, cpu_ms = ticker.tick()
            model_ms.append(ms)
            model_cpu_ms.append(cpu_ms)
            c0 = time.thread_time()
            app.show(snap)
            await pilot.pause()
            render_ms.append(1e3 * (time.thread_time() - c0))
            total_ms.append(model_cpu_ms[-1] + render_ms[-1])
        report("tick: model update (collector, wall)", model_ms)
        report("tick: model update (collector, CPU)", model_cpu_ms)
        report("tick: render (app, CPU)", render_ms)
        report("tick: model + render (CPU)", total_ms)
        await measure_keys(app, pilot.press, pilot.pause)


async def measure_keys(
    app: BpftopApp,
    press: Callable[..., object],
    pause: Callable[[], object],
) -> None:
    plan = [
        ("2", ["down", "down", "up", "right", "left", "e", "pagedown", "home", "enter",
               "backspace"]),
        ("1", ["down", "j", "s", "s", "S", "up"]),
        ("3", ["down", "up", "enter"]),
        ("4", ["down", "down", "right", "left", "up", "enter", "backspace"]),
        ("5", []),
    ]  # fmt: skip
    names = {"1": "top", "2": "tree", "3": "callers", "4": "flame", "5": "diagnostics"}
    by_view: dict[str, list[float]] = {}
    timed: list[tuple[float, str]] = []
    for view_key, keys in plan:
        for n, key in enumerate([view_key, *keys] * 3):
            t0 = time.thread_time()
            await press(key)  # type: ignore[misc]
            await pause()  # type: ignore[misc]
            ms = 1e3 * (time.thread_time() - t0)
            by_view.setdefault(view_key, []).append(ms)
            timed.append((ms, f"{key!r} in {names[view_key]} (#{n + 1})"))
    everything: list[float] = []
    for view_key, values in by_view.items():
        report(f"key → redraw: {names[view_key]}", values)
        everything += values
    report("key → redraw: all views", everything)
    slowest = ", ".join(f"{what} {ms:.0f} ms" for ms, what in sorted(timed, reverse=True)[:5])
    print(f"slowest keys: {slowest}")


def measure_memory(universe: list[Stack], minutes: int, mode: TimeMode) -> None:
    ticker = Ticker(universe, TimeSetting(mode, window_s=30.0, half_life_s=10.0))
    me = psutil.Process()
    gc.collect()
    marks: list[tuple[int, float]] = [(0, me.memory_info().rss / 2**20)]
    for n in range(1, minutes * 60 + 1):
        ticker.tick()
        if n % 300 == 0:
            gc.collect()
            marks.append((n // 60, me.memory_info().rss / 2**20))
    line = "  ".join(f"{m:>2} min {rss:6.0f}" for m, rss in marks)
    print(f"RSS MiB, {mode.value:<10}: {line}")


async def measure_floor() -> None:
    """What one key press costs the harness on a 10-sample profile."""
    small = TimedProfile()
    small.add("app", (Frame("main", "/bin/x", 0), Frame("f", "/bin/x", 0)), 10)
    snap = Snapshot(1, Phase.SAMPLING, CollectionStats("bench"), tree=small.current.tree())
    app = BpftopApp(FakeSource([snap]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        costs = []
        for key in ["down", "up"] * 10:
            t0 = time.thread_time()
            await pilot.press(key)
            await pilot.pause()
            costs.append(1e3 * (time.thread_time() - t0))
        report("harness floor: key on tiny profile", costs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ticks", type=int, default=60, help="ticks rendered in the app")
    parser.add_argument("--per-tick", type=int, default=PER_TICK, help="stack samples per tick")
    parser.add_argument("--minutes", type=int, default=30, help="simulated minutes for memory")
    parser.add_argument("--modes", default="cumulative,window,decay", help="modes for memory")
    parser.add_argument("--gc-tune", action="store_true", help="as bpftop runs: tune_gc()")
    args = parser.parse_args()
    Ticker.per_tick = args.per_tick
    asyncio.run(measure_floor())
    t0 = time.perf_counter()
    universe = make_universe()
    ticker = Ticker(universe, TimeSetting())
    tree = ticker.freeze().tree
    load_s = time.perf_counter() - t0
    print(f"universe: {len(universe):,} stacks; build + first load {load_s:.1f} s")
    print(f"profile: {tree.total_count:,} samples; {args.per_tick:,} stack samples per tick")
    if args.gc_tune:
        tune_gc()
    asyncio.run(measure_app(ticker, args.ticks))
    del ticker, tree
    for mode in args.modes.split(","):
        if mode:
            measure_memory(universe, args.minutes, TimeMode(mode))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
