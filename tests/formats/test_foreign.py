"""Profiles other tools really wrote: py-spy (speedscope and raw folded), a Go program's
runtime/pprof CPU profile, and ``perf record -g`` folded by a tiny collapse here.

Each tool runs in the test (root: py-spy and perf need it). A missing tool fails the
test with what to install; it never skips.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bpftop.tui.cli.files import describe, saved_snapshot
from bpftop.tui.formats.profile_io import load_tree, read_saved
from bpftop.tui.formats.saved import NANOSECONDS, SavedProfile
from tests.exports.consumers import go_pprof_raw, need

SPIN = "import time\ndef spin():\n    end = time.time() + 1.5\n    while time.time() < end:\n" \
    "        pass\nspin()\n"  # fmt: skip
GO_PROGRAM = """package main

import (
	"os"
	"runtime/pprof"
	"time"
)

//go:noinline
func hotLoop(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

func main() {
	f, _ := os.Create(os.Args[1])
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	total, end := 0, time.Now().Add(1500*time.Millisecond)
	for time.Now().Before(end) {
		total += hotLoop(1000000)
	}
	pprof.StopCPUProfile()
	f.Close()
	if total == 42 {
		println(total)
	}
}
"""


def py_spy(tmp_path: Path, fmt: str, name: str) -> Path:
    tool = Path(sys.executable).parent / "py-spy"
    if not tool.exists():
        pytest.fail(f"{tool} is missing: ./scripts/setup.sh installs py-spy (dev extras)")
    script, out = tmp_path / "spin.py", tmp_path / name
    script.write_text(SPIN)
    done = subprocess.run(
        [str(tool), "record", "-r", "200", "-d", "2", "-f", fmt, "-o", str(out), "--",
         "/usr/bin/python3", str(script)], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and out.exists(), done.stderr
    return out


def self_counts(saved: SavedProfile) -> Counter[str]:
    out: Counter[str] = Counter()
    for stack in saved.stacks:
        out[stack.frames[-1].name if stack.frames else stack.thread] += stack.count
    return out


def test_py_spy_speedscope_keeps_its_seconds_as_nanoseconds(tmp_path: Path) -> None:
    path = py_spy(tmp_path, "speedscope", "p.speedscope.json")
    import json

    doc = json.loads(path.read_text())
    (profile,) = doc["profiles"]
    assert profile["unit"] == "seconds" and 0 < profile["weights"][0] < 1  # py-spy's own form
    saved = read_saved(path)
    assert saved.meta.unit == NANOSECONDS
    assert saved.total == pytest.approx(sum(profile["weights"]) * 1e9, rel=1e-6)
    assert saved.total > 1e9  # about 1.5 s of spinning, not 0 samples
    top = self_counts(saved).most_common(1)[0][0]
    assert top.partition(" ")[0] == "spin"
    snap = saved_snapshot(load_tree(path), path)
    assert snap.tree.total_count == saved.total and snap.weight_unit == "ns"
    assert "py-spy" in snap.stats.probe and "seconds" in snap.stats.probe


def test_py_spy_raw_folded_is_folded_not_xml(tmp_path: Path) -> None:
    path = py_spy(tmp_path, "raw", "p.txt")
    lines = path.read_text().splitlines()
    # py-spy's line order varies: put a line opening with `<module>` (once taken for XML) first
    lines.sort(key=lambda line: not line.startswith("<module>"))
    assert lines[0].startswith("<module>")
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    counted = sum(int(m) for m in re.findall(r"\S (\d+)$", text, re.MULTILINE))
    loaded = load_tree(path)
    assert loaded.tree.total_count == counted > 100
    assert self_counts(read_saved(path)).most_common(1)[0][0].partition(" ")[0] == "spin"


def go_cpu_profile(tmp_path: Path) -> Path:
    go = need("go", "golang-go")
    src, out = tmp_path / "goprog", tmp_path / "cpu.pprof"
    src.mkdir()
    (src / "main.go").write_text(GO_PROGRAM)
    (src / "go.mod").write_text("module spin\n\ngo 1.19\n")
    home = tmp_path / "gohome"
    env = {**os.environ, "HOME": str(home), "GOCACHE": str(home / "cache"),
           "GOPATH": str(home / "path"), "GOFLAGS": "-mod=mod", "GOPROXY": "off"}  # fmt: skip
    done = subprocess.run([go, "run", ".", str(out)], cwd=src, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and out.exists(), done.stderr
    return out


def test_go_cpu_profile_says_what_it_is(tmp_path: Path) -> None:
    path = go_cpu_profile(tmp_path)
    stacks, _ = go_pprof_raw(path)
    saved = read_saved(path)
    assert saved.total == sum(stacks.values()) > 10  # the samples/count value, as Go reads it
    names = Counter(n for stack in saved.stacks for n in {f.name for f in stack.frames}
                    for _ in range(stack.count))  # fmt: skip
    assert names["main.hotLoop"] >= 0.8 * saved.total  # hotLoop is under nearly every sample
    meta = saved.meta
    assert meta.sample_type == "samples/count, cpu/nanoseconds"
    assert meta.period == "10,000,000 cpu/nanoseconds" and meta.source == "pprof"
    assert 1.4e9 < meta.duration_ns < 5e9
    snap = saved_snapshot(load_tree(path), path)
    assert snap.process is not None and snap.process.name == "spin"  # not [unknown]
    assert "unknown probe" not in snap.stats.probe and "cpu/nanoseconds" in snap.stats.probe
    assert describe(meta).startswith("samples/count, cpu/nanoseconds, period 10,000,000")
    assert snap.stats.elapsed_s == pytest.approx(meta.duration_ns / 1e9)


_EVENT = re.compile(r"^(\S.*?)\s+(\d+)(?:/\d+)?\s")
_FRAME = re.compile(r"^\s+[0-9a-f]+\s+(.+?)\s+\(([^)]*)\)$")


def collapse_perf_script(text: str) -> Counter[str]:
    """``perf script`` output as folded stacks: comm;root...;leaf, one count per event."""
    folded: Counter[str] = Counter()
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or not (head := _EVENT.match(lines[0])):
            continue
        frames = [m.group(1).split("+0x")[0] for m in map(_FRAME.match, lines[1:]) if m]
        folded[";".join([head.group(1), *reversed(frames)])] += 1
    return folded


def test_perf_record_folded_stacks(tmp_path: Path) -> None:
    perf = need("perf", "linux-perf")
    data, script = tmp_path / "perf.data", tmp_path / "spin.py"
    script.write_text(SPIN)
    done = subprocess.run([perf, "record", "-g", "-F", "499", "-o", str(data), "--",
                           "/usr/bin/python3", str(script)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = subprocess.run([perf, "script", "-i", str(data)], capture_output=True, text=True,
                           timeout=120)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    folded = collapse_perf_script(shown.stdout)
    path = tmp_path / "perf.folded"
    path.write_text("".join(f"{stack} {count}\n" for stack, count in folded.items()))
    loaded = load_tree(path)
    assert loaded.skipped == 0 and loaded.tree.total_count == sum(folded.values()) > 100
    assert [group.label for group in loaded.tree.children][:1] == ["python3"]
    assert read_saved(path).total == loaded.tree.total_count
