"""Every probe kind in every format says what its counts are, as the real consumers read
them: ``go tool pprof -raw`` (sample types, period, values), speedscope's own schema
(unit), headless Chromium (the SVG hover text), and the folded count read back."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from bpftop.tui.formats.profile_io import read_saved, write_saved
from bpftop.tui.formats.saved import NANOSECONDS, ProfileMeta, from_tree, snapshot_meta, to_frame
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Phase, Snapshot
from tests.exports.consumers import Chromium, go_pprof_raw, speedscope_schema
from tests.formats.test_saved import sample_profile

# probe -> (pprof sample types, period type, period, value factors, SVG words for 1 count)
CASES = {
    "profile:hz:999": (["samples/count", "cpu/nanoseconds"], "cpu nanoseconds", 1_001_001,
                       [1, 1_001_001], "9 samples (9.009 ms of CPU)"),
    "software:cpu-clock:2000000": (["samples/count", "cpu/nanoseconds"], "cpu nanoseconds",
                                   2_000_000, [1, 2_000_000], "9 samples (18.000 ms of CPU)"),
    "software:page-faults:1": (["page-faults/count"], "page-faults count", 1, [1],
                               "9 page-faults"),
    "software:context-switches:10": (["samples/count", "context-switches/count"],
                                     "context-switches count", 10, [1, 10],
                                     "9 context-switches (x10 events)"),
    "hardware:cycles:1000000": (["samples/count", "cycles/count"], "cycles count", 1_000_000,
                                [1, 1_000_000], "9 cycles (x1,000,000 events)"),
    "uprobe:c:malloc": (["calls/count"], "calls count", 1, [1], "9 calls"),
    "tracepoint:sched:sched_switch": (["hits/count"], "hits count", 1, [1], "9 hits"),
    "kprobe:do_sys_openat2": (["calls/count"], "calls count", 1, [1], "9 calls"),
    "kretprobe:do_sys_openat2": (["returns/count"], "returns count", 1, [1], "9 returns"),
    "usdt:python3:python:function__entry": (["hits/count"], "hits count", 1, [1], "9 hits"),
    "uretprobe:c:malloc": (["calls/count", "wall/nanoseconds"], "wall nanoseconds", 1, [0, 1],
                           "9 ns of wall time"),
    "offcpu": (["blocks/count", "off-cpu/nanoseconds"], "off-cpu nanoseconds", 1, [0, 1],
               "9 ns of off-cpu time"),
}  # fmt: skip
TIMED = {"uretprobe:c:malloc", "offcpu"}
EVENTS = 9  # the time probes' calls or blocks behind the sample profile's 12 ns (hits())


def hits() -> Profile:
    """The sample profile's stacks with the events a time probe saw on each."""
    events = Profile()
    for stack in from_tree(sample_profile().tree(), ProfileMeta()).stacks:
        events.add(stack.thread, [to_frame(f) for f in stack.frames], stack.count // 2 + 1)
    return events


def recorded_meta(probe: str) -> ProfileMeta:
    """What ``record`` writes for ``probe`` (with the default -F 99), without BPF."""
    tree = sample_profile().tree()
    snap = Snapshot(
        seq=1, phase=Phase.SAMPLING, stats=CollectionStats(probe=probe), tree=tree,
        weight_unit="ns" if probe in TIMED else "", probe_events=EVENTS if probe in TIMED else 0,
    )  # fmt: skip
    return snapshot_meta(snap, frequency_hz=99, start_ns=1_700_000_000_000_000_000,
                         end_ns=1_700_000_002_000_000_000, version="0.1.0")  # fmt: skip


def written(tmp_path: Path, probe: str, fmt: str, suffix: str) -> Path:
    path = tmp_path / f"p{suffix}"
    events = hits().tree() if probe in TIMED else None
    write_saved(from_tree(sample_profile().tree(), recorded_meta(probe), events), path, fmt)
    return path


def test_record_metadata_follows_the_probe() -> None:
    assert recorded_meta("profile:hz:999").frequency_hz == 999  # not -F 99
    off = recorded_meta("offcpu")
    assert off.unit == NANOSECONDS and off.samples == EVENTS and off.timed
    assert recorded_meta("uprobe:c:malloc").unit == ""


@pytest.mark.parametrize("probe", sorted(CASES))
def test_pprof_sample_types_per_probe(probe: str, tmp_path: Path) -> None:
    types, period_type, period, factors, _ = CASES[probe]
    path = written(tmp_path, probe, "pprof", ".pb.gz")
    stacks, text = go_pprof_raw(path)
    assert f"PeriodType: {period_type}\n" in text and f"Period: {period}\n" in text, text[:300]
    header = text.split("Samples:\n", 1)[1].splitlines()[0]
    assert header.split() == types
    samples = text.split("Samples:\n", 1)[1].split("\nLocations\n", 1)[0]
    values = [list(map(int, m.group(1).split())) for m in
              re.finditer(r"^\s*(\d+(?:\s+\d+)*):", samples, re.MULTILINE)]  # fmt: skip
    if probe in TIMED:  # events, then nanoseconds: each stack's own
        assert sorted(values) == [[1, 1], [1, 1], [2, 2], [2, 3], [3, 5]], values
        assert sum(stacks.values()) == EVENTS  # the first value
    else:
        assert values and all(v == [v[0] * f for f in factors] for v in values), values
        assert sum(stacks.values()) == 12  # the first value: the counts as recorded
    back = read_saved(path)
    assert back.total == 12 and back.meta.timed == (probe in TIMED)
    assert sum(s.events for s in back.stacks) == (EVENTS if probe in TIMED else 0)


def test_a_time_profile_without_events_per_stack_writes_its_time_alone(tmp_path: Path) -> None:
    path = tmp_path / "p.pb.gz"
    write_saved(from_tree(sample_profile().tree(), recorded_meta("offcpu")), path, "pprof")
    stacks, text = go_pprof_raw(path)
    assert text.split("Samples:\n", 1)[1].splitlines()[0].split() == ["off-cpu/nanoseconds"]
    assert sum(stacks.values()) == 12 and read_saved(path).total == 12


@pytest.mark.parametrize("probe", sorted(CASES))
def test_speedscope_unit_per_probe(probe: str, tmp_path: Path) -> None:
    path = written(tmp_path, probe, "speedscope", ".speedscope.json")
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, speedscope_schema())
    assert {p["unit"] for p in doc["profiles"]} == {"nanoseconds" if probe in TIMED else "none"}
    back = read_saved(path)
    assert back.total == 12 and back.meta.timed == (probe in TIMED)


@pytest.mark.parametrize("probe", sorted(CASES))
def test_folded_count_reads_back_per_probe(probe: str, tmp_path: Path) -> None:
    path = written(tmp_path, probe, "folded", ".folded")
    assert read_saved(path).total == 12


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    chromium = Chromium()
    chromium.call("Page.enable")
    yield chromium
    chromium.close()


@pytest.mark.parametrize("probe", sorted(CASES))
def test_svg_hover_states_the_unit(probe: str, tmp_path: Path, browser: Chromium) -> None:
    path = written(tmp_path, probe, "svg", ".svg")
    browser.call("Page.navigate", url=path.as_uri())
    browser.wait_event("Page.loadEventFired")
    text = browser.js(
        "[...document.querySelectorAll('g.f')].find(g => g.dataset.n === 'run').dataset.t"
    )
    assert f": {CASES[probe][4]}, 75.00%" in text, text
    assert "samples" not in text or probe not in TIMED


def test_a_timed_profile_is_not_cpu_time_anywhere(tmp_path: Path) -> None:
    meta = replace(recorded_meta("offcpu"), probe="", unit=NANOSECONDS)  # e.g. read back
    path = tmp_path / "p.pb.gz"
    write_saved(from_tree(sample_profile().tree(), meta), path, "pprof")
    _, text = go_pprof_raw(path)
    assert "cpu" not in text.split("Samples:\n", 1)[1].splitlines()[0]
