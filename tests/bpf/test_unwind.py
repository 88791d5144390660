"""The .eh_frame walker against the real kernel: programs without frame
pointers get complete stacks (issue 7). Through ``bpftop record``, so the CLI,
the collector, the table feed and the walker are all exercised."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from tests.bpf.test_record import parse_folded, record

CHAIN = ("main", "run", "a", "b", "c")
DEPTH = 100


def _record(workloads: Path, tmp_path: Path, program: str, *extra: str) -> Counter[tuple[str, ...]]:
    target = subprocess.Popen([str(workloads / program), "60"])
    try:
        out = tmp_path / f"{program}{'-'.join(extra)}.folded"
        result = record(target.pid, out, "-F", "997", "-d", "5", *extra)
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
    """The stack without kernel frames and the workload's inline spin helper."""
    return tuple(f for f in stack if not f.endswith("_[k]") and f != "spin_cycles")


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
