"""The saved-profile value and its formats: folded, speedscope, pprof, SVG, on disk."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from bpftop.base.errors import OutputError
from bpftop.symbols.frame import Frame
from bpftop.tui.formats.pprof import parse_pprof, to_pprof
from bpftop.tui.formats.profile_io import read_saved, write_saved
from bpftop.tui.formats.registry import format_for
from bpftop.tui.formats.saved import ProfileMeta, from_tree, to_profile
from bpftop.tui.formats.saved_folded import diff_lines, from_folded
from bpftop.tui.formats.speedscope import to_speedscope
from bpftop.tui.formats.svgflame import to_svg
from bpftop.tui.model.profile import Profile
from tests.formats.folded_oracle import folded_lines

MAIN = Frame("main", "/bin/app", 0, file="/src/app.c", line=10)
RUN = Frame("run", "/bin/app", 0)
INLINED = Frame("fast_path", "/bin/app", 0, inlined=True, file="/src/app.c", line=3)
KERNEL = Frame("do_syscall_64", "[kernel]", 0, kernel=True)
UNNAMED = Frame(None, "/usr/lib/libx.so", 0x1A2B)
META = ProfileMeta(
    command="./app --fast", pids=(4242,), probe="cpu-clock 99 Hz", frequency_hz=99,
    start_ns=1_700_000_000_000_000_000, end_ns=1_700_000_005_000_000_000, samples=12,
    lost_events=1, dropped_samples=2, version="0.1.0",
)  # fmt: skip
FORMATS = {"folded": "p.folded", "speedscope": "p.speedscope.json", "pprof": "p.pb.gz"}


def sample_profile() -> Profile:
    profile = Profile()
    profile.add("app", (MAIN, RUN, INLINED), 5)
    profile.add("app", (MAIN, RUN, KERNEL), 3)
    profile.add("app", (MAIN, UNNAMED), 2)
    profile.add("app", (MAIN, RUN), 1)
    profile.add("helper", (MAIN,), 1)
    return profile


def test_tree_to_saved_and_back_is_the_same_tree() -> None:
    profile = sample_profile()
    saved = from_tree(profile.tree(), META)
    assert saved.total == 12
    assert saved.threads() == ["app", "helper"]
    restored = to_profile(saved)
    assert restored.tree() == profile.tree()  # labels, modules, kinds, sources, counts
    assert restored.hot_functions() == profile.hot_functions()


def test_meta_items_round_trip_and_skip_unknowns() -> None:
    pairs = META.items()
    assert ("pids", "4242") in pairs and ("probe", "cpu-clock 99 Hz") in pairs
    assert ProfileMeta.from_items([*pairs, ("colour", "red"), ("samples", "many")]) == META
    assert ProfileMeta().items() == []


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_round_trips_stacks_and_counts(fmt: str, tmp_path: Path) -> None:
    profile = sample_profile()
    saved = from_tree(profile.tree(), META)
    path = tmp_path / FORMATS[fmt]
    assert format_for(path).name == fmt
    write_saved(saved, path, fmt)
    back = read_saved(path)
    assert back.skipped == 0
    assert sorted(folded_lines(to_profile(back).tree())) == sorted(folded_lines(profile.tree()))
    if fmt != "folded":  # folded text has no modules, sources or metadata
        assert back.stacks == saved.stacks
        assert back.meta == META


def test_pprof_keeps_inlining_build_ids_periods_and_comments() -> None:
    saved = from_tree(sample_profile().tree(), META)
    raw = parse_pprof(gzip.decompress(to_pprof(saved, {"/bin/app": "abcdef01"})))
    strings = raw.string_table
    assert [strings[t.type] for t in raw.sample_type] == ["samples", "cpu"]
    assert raw.period == 1_000_000_000 // 99
    assert raw.duration_nanos == 5_000_000_000
    app = next(m for m in raw.mapping if strings[m.filename] == "/bin/app")
    assert strings[app.build_id] == "abcdef01"
    inlined = [loc for loc in raw.location if len(loc.line) == 2]
    assert len(inlined) == 1  # run with fast_path inlined into it: one location, caller last
    names = {f.id: strings[f.name] for f in raw.function}
    assert [names[line.function_id] for line in inlined[0].line] == ["fast_path", "run"]
    assert "lost_events=1" in [strings[c] for c in raw.comment]
    values = sorted(tuple(s.value) for s in raw.sample)
    assert values[-1] == (5, 5 * (1_000_000_000 // 99))


def test_folded_import_knows_kernel_frames_and_counts_bad_lines() -> None:
    saved = from_folded("app;main;read_[k] 3\napp;main 2\napp;main;broken\n\napp;x -1\n")
    assert saved.skipped == 2
    kernel = saved.stacks[0].frames[-1]
    assert (kernel.name, kernel.kernel) == ("read", True)
    assert saved.total == 5


def test_diff_lines_carry_both_counts() -> None:
    base = from_folded("app;main;a 5\napp;main;gone 1\n")
    new = from_folded("app;main;a 7\napp;main;new 2\n")
    assert sorted(diff_lines(base, new)) == [
        "app;main;a 5 7", "app;main;gone 1 0", "app;main;new 0 2",
    ]  # fmt: skip


def test_speedscope_has_one_sampled_profile_per_group() -> None:
    doc = to_speedscope(from_tree(sample_profile().tree(), META))
    profiles = {p["name"]: p for p in doc["profiles"]}
    assert sorted(profiles) == ["app", "helper"]
    assert sum(profiles["app"]["weights"]) == 11 and profiles["app"]["unit"] == "none"
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert len(names) == len(set(names)) == 5  # every distinct frame once


def test_svg_is_self_contained_with_every_visible_frame() -> None:
    svg = to_svg(from_tree(sample_profile().tree(), META))
    assert svg.count('<g class="f"') == 1 + 2 + 6  # all, two groups, six call-tree nodes
    assert "<script><![CDATA[" in svg and "bpftopFlame" in svg
    assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")  # nothing fetched
    assert "command: ./app --fast" in svg


def test_svg_leaves_out_frames_too_narrow_to_see_and_everything_below_them() -> None:
    """1,200 px wide, frames under 0.3 px dropped: of 1,010,000 samples, ``wide``
    (1,000,000) and ``many`` (10,000, 12 px) are drawn; each of ``many``'s
    10,000 callees (1 sample, 0.001 px) is not, nor what they call."""
    profile = Profile()
    wide, many = Frame("wide", "/bin/app", 0), Frame("many", "/bin/app", 0)
    profile.add("app", (MAIN, wide), 1_000_000)
    for n in range(10_000):
        callee = Frame(f"callee{n}", "/bin/app", 0)
        profile.add("app", (MAIN, many, callee, Frame("deeper", "/bin/app", 0)), 1)
    svg = to_svg(from_tree(profile.tree(), META))
    assert svg.count('<g class="f"') == 1 + 1 + 3  # all, app, main, wide, many
    assert 'data-n="wide"' in svg and 'data-n="many"' in svg
    assert "callee" not in svg and "deeper" not in svg
    assert f'height="{56 + 4 * 17 + 24}"' in svg  # as deep as what is drawn: 4 rows


def test_failed_write_keeps_the_old_file_and_leaves_no_debris(tmp_path: Path) -> None:
    saved = from_tree(sample_profile().tree(), META)
    path = tmp_path / "keep.pb.gz"
    path.write_bytes(b"old")
    os.chmod(tmp_path, 0o500)
    try:
        if os.access(tmp_path, os.W_OK):  # root ignores the mode: use a missing directory
            path = tmp_path / "missing" / "keep.pb.gz"
        with pytest.raises(OutputError, match="cannot write"):
            write_saved(saved, path, "pprof")
    finally:
        os.chmod(tmp_path, 0o700)
    assert (tmp_path / "keep.pb.gz").read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.pb.gz"]
