"""The model alone at scale: CPU and memory of ``Profile`` for many distinct deep stacks.

Adds N distinct stacks (depth 31..59, random through 200 functions: the shape
of tests/workloads/scale.c) in ticks of 900, reading the tree and the table
after each tick as the live view does, and prints the nodes made, the CPU
seconds and the Python heap (tracemalloc; with --no-memory, the resident memory
instead).
With --write, then what writing a file costs, in CPU seconds and in resident
memory above what the profile held (VmHWM, reset before each): folded text
streamed from the tree's arrays (``tree_folded_writer``: what ``record``
writes by default), then the tree read into a ``SavedProfile``
(``from_tree``) and each format encoded from it.
With --native, through a ``TimedProfile`` (1 s ticks, its 30 s of kept
ticks) as the collector adds them: ``none`` the stacks alone; ``kept`` each
with a native twin (``main`` and 14 interpreter frames, a tuple of its own
per stack, made while the heap is traced: what the collector's stack cache
and kept ticks hold for Python stacks); ``shown`` the same with native
frames only shown (a second store, of the twins):

    .venv/bin/python -m bench.model_scale            # 40,000 stacks
    .venv/bin/python -m bench.model_scale --stacks 10000 --no-memory
    .venv/bin/python -m bench.model_scale --no-memory --write
    .venv/bin/python -m bench.model_scale --native kept
    .venv/bin/python -m bench.model_scale --no-memory --read-at-end   # as record reads
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import time
import tracemalloc

from bpftop.symbols.frame import Frame
from bpftop.tui.formats.profile_io import saved_writer, tree_folded_writer
from bpftop.tui.formats.saved import ProfileMeta, from_tree
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.timemode import TimedProfile

PER_TICK = 900


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stacks", type=int, default=40_000)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--write", action="store_true", help="then time writing each format")
    parser.add_argument("--native", choices=("none", "kept", "shown"), help="see above")
    parser.add_argument(
        "--read-at-end", action="store_true", help="read the tree once at the end (as record does)"
    )
    args = parser.parse_args()
    rng = random.Random(1)
    functions = [Frame(f"f{i}", "scale", 0) for i in range(200)]
    main_frame = Frame("main", "scale", 0)
    stacks = [
        (main_frame, *(rng.choice(functions) for _ in range(rng.randint(30, 58))))
        for _ in range(args.stacks)
    ]
    if not args.no_memory:
        tracemalloc.start()
    base_mib = _status_mib("VmRSS:")  # the stacks made above included
    started = time.process_time()
    kept = timed(stacks, args.native, main_frame) if args.native else None
    profile = kept.current if kept is not None else Profile()
    for at in range(0, len(stacks), PER_TICK) if kept is None else ():
        for stack in stacks[at : at + PER_TICK]:
            profile.add("scale", stack, 1)
        if not args.read_at_end:
            profile.tree()
            profile.hot_functions(limit=500)
    profile.tree()
    profile.hot_functions(limit=500)
    cpu_s = time.process_time() - started
    nodes = f"{profile.store.size:,}"
    if kept is not None and kept.current is not kept.cumulative:
        nodes = f"{kept.cumulative.store.size:,} + {nodes} (shown)"
    line = f"{args.stacks} stacks, {nodes} nodes: {cpu_s:.2f} CPU-s"
    if not args.no_memory:
        held, peak = tracemalloc.get_traced_memory()
        line += f", heap {held / 2**20:.1f} MiB (peak {peak / 2**20:.0f} MiB, stacks included)"
    else:  # resident (untouched pages of zeroed arrays are not), less what was there before
        line += f", RSS +{_status_mib('VmRSS:') - base_mib} MiB"
        line += f" (peak +{_status_mib('VmHWM:') - base_mib} MiB)"
    print(line)
    if args.write:
        tracemalloc.stop()
        write(profile)


def timed(stacks: list[tuple[Frame, ...]], native: str, main_frame: Frame) -> TimedProfile:
    """The stacks added through a TimedProfile (see the module's docstring)."""
    interpreter = [Frame(f"_Py{i}", "/usr/bin/python3.11", 0) for i in range(14)]
    t = TimedProfile()
    t.select_native(native == "shown")
    for at in range(0, len(stacks), PER_TICK):
        for stack in stacks[at : at + PER_TICK]:
            twin = (main_frame, *interpreter) if native != "none" else None
            t.add("scale", stack, 1, native=twin)
        t.end_tick(1.0)
        t.current.tree()
        t.current.hot_functions(limit=500)
    return t


def _status_mib(field: str) -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(field))
    return int(line.split()[1]) // 1024


def write(profile: Profile) -> None:
    """CPU and peak resident memory of the streamed folded writer, of ``from_tree``
    and of each writer from its ``SavedProfile``."""
    tree = profile.tree()
    base = _reset_hwm()
    started = time.process_time()
    with open(os.devnull, "wb") as out:
        tree_folded_writer(tree)(out)
    print(f"folded from the tree (streamed): {time.process_time() - started:.2f} CPU-s, "
          f"peak +{_status_mib('VmHWM:') - base} MiB")  # fmt: skip
    base = _reset_hwm()
    started = time.process_time()
    saved = from_tree(tree, ProfileMeta())
    print(f"from_tree: {len(saved.stacks):,} stacks, {time.process_time() - started:.2f} CPU-s, "
          f"peak +{_status_mib('VmHWM:') - base} MiB")  # fmt: skip
    for fmt in ("folded", "pprof", "speedscope", "svg"):
        started = time.process_time()
        with open(os.devnull, "wb") as out:
            saved_writer(saved, fmt)(out)
        print(f"{fmt}: {time.process_time() - started:.2f} CPU-s, "
              f"peak +{_status_mib('VmHWM:') - base} MiB")  # fmt: skip


def _reset_hwm() -> int:
    """Collect garbage, then VmHWM := VmRSS; that RSS (MiB)."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    return _status_mib("VmRSS:")


if __name__ == "__main__":
    main()
