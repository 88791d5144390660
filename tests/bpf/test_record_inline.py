"""`bpftop record` of a workload whose time is all in inlined code: the Top
table's default grouping (by symbol) gives the time to the functions the code
belongs to, and the folded file marks the inline frames."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bpftop.tui.formats.profile_io import load_tree
from bpftop.tui.model.derived import hot_by_symbol, hot_from_tree
from tests.bpf.test_record import record


def test_inlined_helper_time_counts_for_its_functions(workloads: Path, tmp_path: Path) -> None:
    """hot_a/hot_b/hot_c each inline mix(); 60/30/10 within ±5 points by symbol."""
    target = subprocess.Popen([str(workloads / "split_inline"), "40"])
    try:
        out = tmp_path / "split_inline.folded"
        result = record(target.pid, out, "-F", "499", "-d", "8")
        assert result.returncode == 0, result.stderr
    finally:
        target.kill()
        target.wait()
    text = out.read_text()
    assert ";mix_[i] " in text, "inline frames carry the _[i] suffix"
    tree = load_tree(out).tree
    total = tree.total_count
    # ~4,000 on an idle machine; a busy one gives the target less CPU (see test_record).
    assert total > 300, f"expected ~4000 samples at 499 Hz for 8 s, got {total}"
    by_symbol = {f.label: f.self_count for f in hot_by_symbol(tree)}
    assert "mix" not in by_symbol, "an inline frame is no symbol of its own"
    for func, truth in (("hot_a", 60), ("hot_b", 30), ("hot_c", 10)):
        measured = 100 * by_symbol.get(func, 0) / total
        assert abs(measured - truth) <= 5, f"{func}: {measured:.1f}% vs {truth}% ({by_symbol})"
    as_rows = {f.label: f.self_count for f in hot_from_tree(tree)}
    assert as_rows["mix"] >= 0.9 * total, "with inline rows, the helper holds the self time"
