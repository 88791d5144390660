"""Real recordings exported in every format, read back, and opened by the real consumers."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import jsonschema
import pytest

from bpftop.bpf.program import CpuSampler
from bpftop.symbols.elf.disk_cache import read_build_id
from bpftop.tui.collect.collector import Collector
from bpftop.tui.formats.profile_io import read_saved, write_saved
from bpftop.tui.formats.saved import ProfileMeta, SavedProfile, from_tree, to_profile
from bpftop.tui.model.snapshot import Snapshot
from tests.bpf.test_early import cpu_s
from tests.bpf.test_record import record
from tests.conftest import BPFTOP
from tests.exports.consumers import Chromium, go_pprof_raw, speedscope_schema
from tests.exports.test_consumers import expected_names, frame_box
from tests.formats.folded_oracle import folded_lines

EXTENSIONS = {"folded": ".folded", "speedscope": ".speedscope.json", "pprof": ".pb.gz"}


@pytest.fixture(scope="module")
def recorded(workloads: Path) -> Iterator[SavedProfile]:
    """About two seconds of the split workload at 299 Hz, collected in-process."""
    target = subprocess.Popen([str(workloads / "split"), "60"])
    collector = Collector(target.pid, CpuSampler(299), interval_s=0.5)
    snaps: list[Snapshot] = []
    errors: list[Exception] = []
    collector.start(snaps.append, on_error=errors.append)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not errors:
            if snaps and snaps[-1].tree.total_count >= 500:
                break
            time.sleep(0.1)
    finally:
        collector.stop()
        target.kill()
        target.wait()
    assert not errors, errors
    snap = collector.last
    assert snap is not None and snap.tree.total_count >= 500, "too few samples"
    meta = ProfileMeta(command="split 60", pids=(target.pid,), probe=snap.stats.probe,
                       frequency_hz=299, samples=snap.tree.total_count, version="test")  # fmt: skip
    yield from_tree(snap.tree, meta)


@pytest.mark.parametrize("fmt", sorted(EXTENSIONS))
def test_recording_round_trips_through_every_format(
    recorded: SavedProfile, fmt: str, tmp_path: Path
) -> None:
    path = tmp_path / f"split{EXTENSIONS[fmt]}"
    write_saved(recorded, path, fmt)
    back = read_saved(path)
    assert back.skipped == 0
    assert back.total == recorded.total >= 500
    want = sorted(folded_lines(to_profile(recorded).tree()))
    assert sorted(folded_lines(to_profile(back).tree())) == want
    if fmt != "folded":
        assert back.stacks == recorded.stacks  # modules, kinds, sources too
        assert back.meta == recorded.meta
    hot = {h.label for h in to_profile(back).hot_functions(3)}
    assert hot == {"hot_a", "hot_b", "hot_c"}


def test_recording_opens_in_speedscope_schema_go_pprof_and_chromium(
    recorded: SavedProfile, tmp_path: Path
) -> None:
    speedscope = tmp_path / "split.speedscope.json"
    write_saved(recorded, speedscope, "speedscope")
    jsonschema.validate(json.loads(speedscope.read_text()), speedscope_schema())
    pprof = tmp_path / "split.pb.gz"
    write_saved(recorded, pprof, "pprof")
    stacks, _ = go_pprof_raw(pprof)
    assert dict(stacks) == expected_names(recorded)
    svg = tmp_path / "split.svg"
    write_saved(recorded, svg, "svg")
    browser = Chromium()
    try:
        browser.call("Page.enable")
        browser.call("Page.navigate", url=svg.as_uri())
        browser.wait_event("Page.loadEventFired")
        box = frame_box(browser, "hot_a")
        browser.mouse("mousePressed", box["x"], box["y"])
        browser.mouse("mouseReleased", box["x"], box["y"])
        assert browser.js("document.documentElement.getAttribute('data-zoom')") == "hot_a"
        assert frame_box(browser, "hot_a")["w"] == pytest.approx(1200, abs=1)
    finally:
        browser.close()


def test_record_writes_pprof_with_build_ids(workloads: Path, tmp_path: Path) -> None:
    target = subprocess.Popen([str(workloads / "split"), "30"])
    try:
        out = tmp_path / "split.pb.gz"
        before = cpu_s(target.pid)
        result = record(target.pid, out, "-F", "199", "-d", "2")
        used = cpu_s(target.pid) - before
        assert result.returncode == 0, result.stderr
    finally:
        target.kill()
        target.wait()
    written = re.search(r"wrote (\d+) samples .*\(pprof;", result.stderr)
    assert written, result.stderr
    stacks, text = go_pprof_raw(out)
    # Half the CPU time the target had while bpftop ran, at 199 Hz.
    assert sum(stacks.values()) == int(written.group(1)) > 0.5 * used * 199 > 50
    with open(workloads / "split", "rb") as stream:
        build_id = read_build_id(stream)
    assert build_id and f"{workloads / 'split'} {build_id}" in text
    assert f"Comment: pids={target.pid}" in text and "Comment: frequency_hz=199" in text
    saved = read_saved(out)
    assert saved.meta.end_ns > saved.meta.start_ns > 0


def record_command(out: Path, probe: str, *command: str) -> SavedProfile:
    """``record --probe PROBE -o OUT -- COMMAND``; the profile as written."""
    result = subprocess.run(
        [str(BPFTOP), "record", "-o", str(out), "--probe", probe, "--", *command],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return read_saved(out)


def by_caller(stacks: Iterable[tuple[tuple[str, ...], int]], leaf: str) -> Counter[str]:
    """Counts per caller of ``leaf`` (the frame under it), from (root-first names, count)."""
    found = Counter[str]()
    for names, count in stacks:
        if leaf in names:
            found[names[names.index(leaf) - 1]] += count
    return found


def test_uretprobe_pprof_holds_exact_calls_beside_wall_time(
    workloads: Path, tmp_path: Path
) -> None:
    """``probed latency 50``: timed() 50 times via slow_path (3 ms) and 50 via
    fast_path (1 ms). Go's pprof reads ``calls/count`` first (exact per stack),
    then ``wall/nanoseconds``; bpftop reads both back."""
    out = tmp_path / "latency.pb.gz"
    saved = record_command(out, f"uretprobe:{workloads / 'probed'}:timed",
                           str(workloads / "probed"), "latency", "50", "go")  # fmt: skip
    stacks, text = go_pprof_raw(out)
    assert text.split("Samples:\n", 1)[1].splitlines()[0].split() == [
        "calls/count", "wall/nanoseconds"]  # fmt: skip
    assert by_caller(stacks.items(), "timed") == {"slow_path": 50, "fast_path": 50}
    named = [(tuple(f.name for f in s.frames), s) for s in saved.stacks]
    calls = by_caller(((names, s.events) for names, s in named), "timed")
    wall_ns = by_caller(((names, s.count) for names, s in named), "timed")
    assert calls == {"slow_path": 50, "fast_path": 50} and saved.meta.samples == 100
    assert 50 * 3_000_000 <= wall_ns["slow_path"] <= 50 * 30_000_000, wall_ns
    assert 50 * 1_000_000 <= wall_ns["fast_path"] < wall_ns["slow_path"], wall_ns


def test_offcpu_pprof_holds_blocks_beside_off_cpu_time(workloads: Path, tmp_path: Path) -> None:
    """``probed sleeps 1``: long_wait blocks 7 ms, short_wait 3 ms, in turn; each
    stack's off-CPU time over its blocks is at least its sleep, and every block
    seen is on some stack."""
    out = tmp_path / "sleeps.pb.gz"
    saved = record_command(out, "offcpu", str(workloads / "probed"), "sleeps", "1", "go")
    stacks, text = go_pprof_raw(out)
    assert text.split("Samples:\n", 1)[1].splitlines()[0].split() == [
        "blocks/count", "off-cpu/nanoseconds"]  # fmt: skip
    assert sum(s.events for s in saved.stacks) == sum(stacks.values()) == saved.meta.samples
    blocks, off_ns = Counter[str](), Counter[str]()
    for stack in saved.stacks:
        waiter = next((f.name for f in stack.frames if f.name.endswith("_wait")), "other")
        blocks[waiter] += stack.events
        off_ns[waiter] += stack.count
    assert blocks["long_wait"] >= 50 and blocks["short_wait"] >= 50, blocks
    assert 7e6 <= off_ns["long_wait"] / blocks["long_wait"] <= 30e6, (off_ns, blocks)
    assert 3e6 <= off_ns["short_wait"] / blocks["short_wait"] < 7e6, (off_ns, blocks)
