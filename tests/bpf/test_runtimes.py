"""Binaries as people ship them, recorded with default flags on the real kernel:
a Rust release build (rustc's default linker, LLD; no frame pointers), the
no-frame-pointer C chain linked by LLD, gold and GNU ld (PIE and not), and a
Go program whose hot leaf has no frame. Each must reach its main."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from bpftop.symbols.frame import Frame, looks_truncated
from tests.bpf.test_record import parse_folded, record

CHAIN = ("main", "run", "a", "b", "c")


def _record(
    workloads: Path,
    tmp_path: Path,
    program: str,
    seconds: int,
    busy_s: float = 0.3,
    hz: int = 99,
) -> Counter[tuple[str, ...]]:
    path = workloads / program
    assert path.exists(), (
        f"{path} is missing: run scripts/setup.sh (it builds the Rust and Go targets)"
    )
    target = subprocess.Popen([str(path), "60"])
    try:
        time.sleep(busy_s)
        out = tmp_path / f"{program}.folded"
        result = record(target.pid, out, "-d", str(seconds), "-F", str(hz))
        assert result.returncode == 0, result.stderr
    finally:
        target.kill()
        target.wait()
    stacks = parse_folded(out)
    assert sum(stacks.values()) > 50, f"too few samples: {sum(stacks.values())}"
    return stacks


def _user(stack: tuple[str, ...]) -> tuple[str, ...]:
    """The user frames below the process name: no kernel frames (``_[k]``),
    no inlined ones (``_[i]``: the chain's spin helper)."""
    return tuple(f for f in stack[1:] if not f.endswith(("_[k]", "_[i]")))


def _share(stacks: Counter[tuple[str, ...]], wanted: str) -> float:
    total = sum(stacks.values())
    return sum(n for s, n in stacks.items() if wanted in _user(s)) / total


def test_rust_release_build_reaches_main(workloads: Path, tmp_path: Path) -> None:
    stacks = _record(workloads, tmp_path, "rshot", 6)
    share = _share(stacks, "rshot::main")
    print(f"rshot: {share:.2%} of {sum(stacks.values())} samples reach rshot::main")
    assert share >= 0.99, stacks.most_common(5)
    leaves = Counter[str]()
    for stack, n in stacks.items():
        leaves[_user(stack)[-1]] += n
    churn = leaves["rshot::engine::Mixer<u64>::churn"] + leaves["rshot::engine::Mixer<u32>::churn"]
    assert churn / sum(stacks.values()) >= 0.9, leaves.most_common(5)


@pytest.mark.parametrize(
    "program",
    ["chain_nofp_lld", "chain_nofp_lld_nopie", "chain_nofp_gold", "chain_nofp_gold_nopie",
     "chain_nofp_nopie"],
)  # fmt: skip
def test_c_linked_by_each_linker_reaches_main(
    workloads: Path, tmp_path: Path, program: str
) -> None:
    stacks = _record(workloads, tmp_path, program, 4)
    total = sum(stacks.values())
    full = 0
    for stack, n in stacks.items():
        user = _user(stack)
        if "main" in user:
            from_main = user[user.index("main") :]
            # (main;run alone: a sample in run's own loop, between its calls)
            full += n * (from_main == CHAIN[: len(from_main)] and len(from_main) >= 2)
    print(f"{program}: {full / total:.2%} of {total} samples on main;run[;a[;b[;c]]]")
    assert full / total >= 0.99, stacks.most_common(5)


def test_go_frameless_leaf_keeps_its_callers(workloads: Path, tmp_path: Path) -> None:
    """main.run -> main.hotA / main.hotB (2:1) -> main.spin (no frame): the
    callers are named, the split holds, and every stack ends at a frame
    Diagnostics takes for the runtime's outermost (not "stack truncated")."""
    # 999 Hz: ~6,000 samples put one standard deviation of the split at 0.6
    # points (at 99 Hz, 2 points: a 3-point bound fails ~12% of runs by chance).
    stacks = _record(workloads, tmp_path, "goshot", 6, busy_s=1.0, hz=999)
    total = sum(stacks.values())
    callers = Counter[str]()
    for stack, n in stacks.items():
        user = _user(stack)
        for caller in ("main.hotA", "main.hotB"):
            if caller in user and "main.run" in user:
                callers[caller] += n
    named = sum(callers.values()) / total
    a_share = 100 * callers["main.hotA"] / max(1, sum(callers.values()))
    print(f"goshot: callers named in {named:.2%} of {total}; hotA {a_share:.1f}% (want 66.7)")
    assert named >= 0.95, stacks.most_common(5)
    assert abs(a_share - 200 / 3) <= 3
    cut = sum(
        n for s, n in stacks.items() if looks_truncated(Frame(_user(s)[0], "goshot", 0), 1, 128)
    )
    assert cut / total <= 0.01, [
        s for s in stacks if looks_truncated(Frame(_user(s)[0], "", 0), 1, 128)
    ][:3]
