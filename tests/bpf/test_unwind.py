"""The .eh_frame walker against the real kernel: programs without frame
pointers get complete stacks. Through ``bpftop record``, so the CLI,
the collector, the table feed and the walker are all exercised."""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from pathlib import Path

from bpftop.bpf.program import CpuSampler
from bpftop.bpf.unwinder import Unwinder
from bpftop.symbols.elf.code_ranges import code_ranges
from bpftop.symbols.unwind.cache import UnwindCache
from bpftop.tui.collect.unwind_feed import UnwindFeed
from tests.bpf.test_record import parse_folded, record
from tests.conftest import BPFTOP

CHAIN = ("main", "run", "a", "b", "c")
DEPTH = 100


def _record(workloads: Path, tmp_path: Path, program: str, *extra: str) -> Counter[tuple[str, ...]]:
    target = subprocess.Popen([str(workloads / program), "60"])
    try:
        out = tmp_path / f"{program}{'-'.join(extra)}.folded"
        # --no-early: these measure the BPF walker, not the early frame-pointer samples.
        result = record(target.pid, out, "-F", "997", "-d", "5", "--no-early", *extra)
        assert result.returncode == 0, result.stderr
    finally:
        target.kill()
        target.wait()
    stacks = parse_folded(out)
    assert sum(stacks.values()) > 1000, f"too few samples: {sum(stacks.values())}"
    return stacks


def _chain_report(stacks: Counter[tuple[str, ...]]) -> tuple[float, dict[str, float]]:
    """(share of samples whose stack is the full chain from main, self share per function)."""
    total = sum(stacks.values())
    full, leaves = 0, Counter[str]()
    for full_stack, count in stacks.items():
        stack = _user_functions(full_stack)
        leaf = stack[-1]
        leaves[leaf] += count
        if leaf in CHAIN[2:] and "main" in stack:
            from_main = stack[stack.index("main") :]
            full += count * (from_main == CHAIN[: CHAIN.index(leaf) + 1])
    return full / total, {f: 100 * leaves[f] / total for f in CHAIN[2:]}


def _user_functions(stack: tuple[str, ...]) -> tuple[str, ...]:
    """The stack without kernel frames and the workload's inline spin helper
    (folded marks it inlined: ``spin_cycles_[i]``)."""
    return tuple(
        f for f in stack if not f.endswith("_[k]") and f.removesuffix("_[i]") != "spin_cycles"
    )


def test_omit_frame_pointer_build_has_full_chains_and_fp_build_shares(
    workloads: Path, tmp_path: Path
) -> None:
    nofp_full, nofp_shares = _chain_report(_record(workloads, tmp_path, "chain_nofp"))
    fp_full, fp_shares = _chain_report(_record(workloads, tmp_path, "chain", "--unwind", "fp"))
    fp_only_full, _ = _chain_report(_record(workloads, tmp_path, "chain_nofp", "--unwind", "fp"))
    print(f"full chain: dwarf on -fomit-frame-pointer {nofp_full:.2%}, fp on the fp build "
          f"{fp_full:.2%}, fp on -fomit-frame-pointer {fp_only_full:.2%}; shares {nofp_shares} "
          f"vs {fp_shares}")  # fmt: skip
    assert nofp_full >= 0.99, f"only {nofp_full:.2%} of samples have main;run;a;b;c"
    assert fp_full >= 0.95  # the reference itself is sound
    for func in CHAIN[2:]:
        assert abs(nofp_shares[func] - fp_shares[func]) <= 3, (func, nofp_shares, fp_shares)
    assert fp_only_full < 0.5, "frame pointers alone should not unwind this binary"


def test_recursion_of_depth_100_is_reported_whole(workloads: Path, tmp_path: Path) -> None:
    stacks = _record(workloads, tmp_path, "deep_nofp")
    total = sum(stacks.values())
    whole = sum(
        count
        for stack, count in stacks.items()
        if stack.count("recurse") == DEPTH and stack[-DEPTH - 2 :][:2] == ("main", "run")
    )
    assert whole / total >= 0.95, f"only {whole}/{total} samples show all {DEPTH} frames"


def test_dwarf_mode_walks_tables_only(workloads: Path, tmp_path: Path) -> None:
    """--unwind dwarf still completes the chain (the binary has tables)."""
    full, _ = _chain_report(_record(workloads, tmp_path, "chain_nofp", "--unwind", "dwarf"))
    assert full >= 0.99


PYTHON = "/usr/bin/python3"
PY_LOOP = """
import sys, time
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
end = time.time() + float(sys.argv[1])
while time.time() < end: fib(20)
"""
START_CHAIN = ("_start", "__libc_start_main", "__libc_start_call_main", "Py_BytesMain")


def _perf_stacks(data: Path) -> Counter[tuple[str, ...]]:
    """Root-first stacks from ``perf script``: unknown frames as "?", perf's
    extra inline frames dropped (bpftop names the function the address is in)."""
    text = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "ip,sym"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    stacks: Counter[tuple[str, ...]] = Counter()
    for block in text.split("\n\n"):
        frames = [line.split(None, 1) for line in block.strip().splitlines()]
        names = [f[1].strip() for f in frames if len(f) == 2 and "(inlined)" not in f[1]]
        if names:
            stacks[tuple("?" if n == "[unknown]" else n for n in reversed(names))] += 1
    return stacks


def _record_cached(pid: int, out: Path, cache: Path, *extra: str) -> None:
    """``bpftop record`` with its symbol and unwind-table cache in ``cache``."""
    result = subprocess.run(
        [str(BPFTOP), "record", "-p", str(pid), "-o", str(out), *extra],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "BPFTOP_SYMBOL_CACHE_DIR": str(cache)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def _from_main(stack: tuple[str, ...]) -> tuple[str, ...] | None:
    """The frames from Py_BytesMain to the leaf, unknown ones as "?" (None: no Py_BytesMain)."""
    user = _user_functions(stack)
    if "Py_BytesMain" not in user:
        return None
    return tuple("?" if "+0x" in f else f for f in user[user.index("Py_BytesMain") :])


def test_debian_python_reaches_start_and_matches_perf_dwarf(tmp_path: Path) -> None:
    """Stripped, no frame pointers, main not even in .dynsym: the start chain is
    reached and the frames in between are perf --call-graph dwarf's. The table
    cache is warmed first (cold builds are timed by bench.unwind_bench)."""
    if subprocess.run(["perf", "--version"], capture_output=True).returncode != 0:
        raise AssertionError("perf is needed (scripts/setup.sh installs linux-perf)")
    cache = tmp_path / "cache"
    script = tmp_path / "loop.py"
    script.write_text(PY_LOOP)
    target = subprocess.Popen([PYTHON, str(script), "40"])
    try:
        time.sleep(0.3)  # let the loader map libc
        for code in code_ranges(target.pid):  # what bpftop's feed would build first
            assert UnwindCache(str(cache / "unwind")).load(code.open_path) is not None
        out, data = tmp_path / "py.folded", tmp_path / "perf.data"
        perf = subprocess.Popen(
            ["perf", "record", "-q", "-F", "499", "--call-graph", "dwarf", "-p",
             str(target.pid), "-o", str(data), "--", "sleep", "8"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        # Native frames, as perf's (--no-python: no Python functions in place of the eval loop).
        _record_cached(target.pid, out, cache, "-F", "499", "-d", "6", "--no-early", "--no-python")
        perf.wait(timeout=60)
    finally:
        target.kill()
        target.wait()
    ours = parse_folded(out)
    total = sum(ours.values())
    started = sum(n for s, n in ours.items() if _user_functions(s)[1:5] == START_CHAIN)
    assert started / total >= 0.95, f"only {started}/{total} samples reach {START_CHAIN}"
    our_stacks = {_from_main(s) for s in ours}
    theirs = Counter({_from_main(s): n for s, n in _perf_stacks(data).items()})
    compared = sum(n for s, n in theirs.items() if s is not None)
    matched = sum(n for s, n in theirs.items() if s is not None and s in our_stacks)
    print(f"python3: {started / total:.2%} reach the start chain; {matched}/{compared} perf "
          f"stacks found among ours")  # fmt: skip
    assert compared > 500 and matched / compared >= 0.95, (matched, compared)


def _has_table(unwinder: Unwinder, pid: int, name: str) -> bool:
    starts = {c.start for c in code_ranges(pid) if name in c.path}
    return any(rows for start, _, rows in unwinder.process_mappings(pid) if start in starts)


def test_feed_notices_dlopen_and_shares_tables(tmp_path: Path) -> None:
    """A library loaded later gets its table within a poll; a second process
    mapping the same files reuses the rows already written."""
    late = "import sys, time; sys.stdin.readline(); import _ctypes; time.sleep(60)"
    first = subprocess.Popen([PYTHON, "-c", late], stdin=subprocess.PIPE)
    second = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)"])
    cache = UnwindCache(str(tmp_path / "unwind"))
    try:
        with CpuSampler(99, unwind="auto") as sampler:
            sampler.load()
            unwinder = sampler.unwinder
            assert unwinder is not None
            feeds = [UnwindFeed(p.pid, cache=cache, poll_s=0.2).start() for p in (first, second)]
            for feed in feeds:
                feed.attach(unwinder)
                assert feed.ready.wait(120)
            rows_for_two = unwinder.rows_used
            before = unwinder.process_mappings(first.pid)
            assert first.stdin is not None
            first.stdin.write(b"go\n")  # now it dlopens _ctypes
            first.stdin.flush()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not _has_table(unwinder, first.pid, "_ctypes"):
                time.sleep(0.1)
            after = unwinder.process_mappings(first.pid)
            dlopened = _has_table(unwinder, first.pid, "_ctypes")
            for feed in feeds:
                feed.close()
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()
    assert all(rows > 0 for _, _, rows in before), "every file of python3 has a table"
    assert len(after) > len(before), "the dlopened library (and its dependencies) are mapped"
    assert dlopened, "the dlopened library got its table"
    one_process = sum(rows for _, _, rows in before)
    assert rows_for_two == one_process, "the second process reused the first one's rows"
