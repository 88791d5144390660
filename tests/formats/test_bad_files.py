"""Bad saved profiles: a clear one-line error or a count of what was skipped, never a traceback."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpftop.tui.formats import profile_io
from bpftop.tui.formats.kinds import ProfileFileError
from bpftop.tui.formats.pprof import parse_pprof
from bpftop.tui.formats.profile_io import read_saved, write_saved
from bpftop.tui.formats.saved import from_tree
from tests.formats.test_saved import META, sample_profile


def written(folder: Path, name: str, fmt: str) -> Path:
    path = folder / name
    write_saved(from_tree(sample_profile().tree(), META), path, fmt)
    return path


def test_truncated_json_names_where_it_broke(tmp_path: Path) -> None:
    path = written(tmp_path, "p.speedscope.json", "speedscope")
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ProfileFileError, match=r"broken JSON at line 1 column \d+") as err:
        read_saved(path)
    assert "truncated" in str(err.value) and "\n" not in str(err.value)


def test_speedscope_evented_and_dangling_frames(tmp_path: Path) -> None:
    path = written(tmp_path, "p.speedscope.json", "speedscope")
    doc = json.loads(path.read_text())
    weights = doc["profiles"][0]["weights"]
    doc["profiles"][0]["samples"][weights.index(1)] = [0, 99]  # frame 99 does not exist
    weights[weights.index(5)] = float("nan")
    path.write_text(json.dumps(doc))
    saved = read_saved(path)
    assert saved.skipped == 2 and saved.total == 12 - 1 - 5  # main;run and main;run;fast_path
    doc["profiles"][0]["type"] = "evented"
    path.write_text(json.dumps(doc))
    with pytest.raises(ProfileFileError, match="only sampled profiles"):
        read_saved(path)


def test_folded_lines_without_counts_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "p.folded"
    path.write_text("app;main;a 3\napp;main;b\napp;main;c x\n;; \napp;main;a 2\n")
    saved = read_saved(path)
    assert saved.skipped == 3 and saved.total == 5


def test_pprof_with_dangling_ids_skips_those_samples(tmp_path: Path) -> None:
    path = written(tmp_path, "p.pb.gz", "pprof")
    raw = parse_pprof(gzip.decompress(path.read_bytes()))
    by_count = {sample.value[0]: sample for sample in raw.sample if sample.value[0] != 1}
    next(s for s in raw.sample if s.value[0] == 1).location_id.append(999)  # no such location
    inlined = next(loc for loc in raw.location if len(loc.line) == 2)
    inlined.line[0].function_id = 777  # no such function: the 5-sample stack goes
    by_count[2].label[0].key = 10_000  # no such string
    path.write_bytes(gzip.compress(raw.SerializeToString()))
    saved = read_saved(path)
    assert saved.skipped == 3 and saved.total == 3 + 1  # the kernel stack and helper's
    assert {stack.thread for stack in saved.stacks} == {"app", "helper"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (gzip.compress(b"\xff\xfe not protobuf"), "not a pprof profile"),
        (gzip.compress(bytes(range(256)) * 40)[:200], "gzip data is truncated"),
        (b"\x1f\x8b\x08garbage", "broken gzip data"),
        (b"\x00\x01\xfe\xff", "neither text nor gzip"),
    ],
)
def test_broken_binaries_get_one_line(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "p.pb.gz"
    path.write_bytes(data)
    with pytest.raises(ProfileFileError, match=message):
        read_saved(path)


def test_a_1_gib_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.folded"
    with open(path, "wb") as out:
        out.truncate(1 << 30)  # sparse: no disk used
    with pytest.raises(ProfileFileError, match=r"is 1,024 MiB, more than bpftop reads"):
        read_saved(path)
    os.unlink(path)


def test_a_gzip_bomb_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_io, "MAX_READ_BYTES", 1 << 20)
    path = tmp_path / "bomb.pb.gz"
    path.write_bytes(gzip.compress(b"\0" * (4 << 20)))  # 4 KiB that inflate to 4 MiB
    with pytest.raises(ProfileFileError, match="inflates to more than 1 MiB"):
        read_saved(path)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    fmt=st.sampled_from(["folded", "speedscope", "pprof"]),
    cut=st.integers(min_value=0, max_value=4000),
    flips=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=4),
)
def test_damaged_files_never_raise_anything_else(
    tmp_path: Path, fmt: str, cut: int, flips: list[tuple[int, int]]
) -> None:
    path = written(tmp_path, f"p-{fmt}", fmt)
    data = bytearray(path.read_bytes())
    if fmt == "pprof":  # damage the protobuf inside, not only the gzip around it
        data = bytearray(gzip.decompress(bytes(data)))
    for at, value in flips:
        if data:
            data[at % len(data)] = value
    data = data[: cut % (len(data) + 1)]
    path.write_bytes(gzip.compress(bytes(data)) if fmt == "pprof" else bytes(data))
    try:
        saved = read_saved(path)
    except ProfileFileError as err:
        assert "\n" not in str(err)
    else:
        assert saved.total >= 0 and saved.skipped >= 0


def test_folded_count_beyond_64_bits_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "huge.folded"
    path.write_text("app;main 3\napp;main;run 99999999999999999999999\n")
    with pytest.raises(ProfileFileError, match="does not fit in 64 bits"):
        profile_io.load_tree(path)
