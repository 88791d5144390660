"""Import benchmark: how long ``bpftop view`` takes to load a large folded file.

    .venv/bin/python -m bench.import_bench [LINES]

Writes LINES (default 1,000,000) distinct folded stacks, deterministic:
random walks 8-32 frames deep down a fixed call graph of 2,000 functions
(each calls six others, each four times as often as the next), a sixth of them
ending in kernel frames. Then times what ``bpftop view`` does before the first frame:
read, parse and build the call tree (``load_tree``: every format's stacks
become key paths merged into an array tree, ``array_tree``), then the
function table (``saved_snapshot``), with the
garbage collector tuned as ``view`` tunes it. The target is <= 10 s for
1 M lines. Also writes the same profile as speedscope and pprof and times
reading those back.
"""

from __future__ import annotations

import gc
import random
import sys
import tempfile
import time
from pathlib import Path

from bpftop.tui.cli.files import saved_snapshot
from bpftop.tui.cli.gc_tuning import tune_gc
from bpftop.tui.formats.profile_io import load_tree, read_saved, write_saved
from bpftop.tui.model.snapshot import CallNode

FUNCTIONS = [f"fn_{i:04d}_{('parse', 'hash', 'io', 'alloc')[i % 4]}" for i in range(2_000)]
KERNEL = ["entry_SYSCALL_64_[k]", "do_syscall_64_[k]", "ksys_write_[k]", "vfs_write_[k]"]
CALLEES = 6


def folded_text(lines: int, seed: int = 7) -> str:
    """Distinct stacks from random walks down a fixed call graph (each function
    calls six others, each four times as often as the next, as hot paths are),
    so callers are shared the way real profiles share them."""
    rng = random.Random(seed)
    callees = [rng.sample(range(2_000), CALLEES) for _ in FUNCTIONS]
    weights = [4.0**-k for k in range(CALLEES)]
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < lines:
        depth = rng.randint(8, 32)
        at = rng.randrange(8)
        stack = ["app", "_start", "main"]
        while len(stack) < depth:
            stack.append(FUNCTIONS[at])
            at = callees[at][rng.choices(range(CALLEES), weights)[0]]
        if rng.random() < 1 / 6:
            stack += KERNEL[: rng.randint(1, 4)]
        line = ";".join(stack)
        if line not in seen:
            seen.add(line)
            out.append(f"{line} {rng.randint(1, 50)}")
    return "\n".join(out) + "\n"


def _nodes(tree: CallNode) -> int:
    count, todo = 0, [tree]
    while todo:
        node = todo.pop()
        count += 1
        todo.extend(node.children)
    return count


def _timed(label: str, path: Path) -> float:
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    loaded = load_tree(path)
    parsed = time.perf_counter()
    snap = saved_snapshot(loaded, path)
    done, cpu = time.perf_counter(), time.process_time() - cpu
    print(
        f"{label:<11} {path.stat().st_size / 2**20:7.1f} MiB  read+tree {parsed - start:5.2f} s  "
        f"function table {done - parsed:5.2f} s  total {done - start:5.2f} s "
        f"(CPU {cpu:5.2f} s; more wall time = a busy machine)  "
        f"({_nodes(snap.tree):,} tree nodes, {snap.tree.total_count:,} samples)"
    )
    return done - start


def main() -> None:
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    tune_gc()  # as bpftop view and diff do before loading
    with tempfile.TemporaryDirectory() as folder:
        folded = Path(folder) / "big.folded"
        folded.write_text(folded_text(lines))
        total = _timed("folded", folded)
        saved = read_saved(folded)
        for fmt, name in (("speedscope", "big.speedscope.json"), ("pprof", "big.pb.gz")):
            path = Path(folder) / name
            write_saved(saved, path, fmt)
            _timed(fmt, path)
    verdict = "meets" if total <= 10 else "MISSES"
    print(f"{lines:,} folded lines load in {total:.2f} s: {verdict} the <= 10 s target")


if __name__ == "__main__":
    main()
