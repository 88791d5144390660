"""Bad saved profiles: a clear one-line error or a count of what was skipped, never a traceback."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpftop.tui.formats import profile_io
from bpftop.tui.formats.pprof import parse_pprof
from bpftop.tui.formats.profile_io import read_saved, write_saved
from bpftop.tui.formats.registry import ProfileFileError
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


def _read_all_ways(path: Path) -> list[str]:
    """What ``read_saved`` (diff --folded) and ``load_tree`` (view, diff) say of
    ``path``: each the one-line refusal."""
    said = []
    for read in (read_saved, profile_io.load_tree):
        with pytest.raises(ProfileFileError) as err:
            read(path)
        said.append(str(err.value))
    return said


def test_speedscope_weights_out_of_range_are_refused_naming_the_file(tmp_path: Path) -> None:
    """1e308 was an internal OverflowError in view and a 309-digit count in diff --folded."""
    path = tmp_path / "big.speedscope.json"
    doc: dict[str, Any] = {
        "shared": {"frames": [{"name": "a"}, {"name": "b"}]},
        "profiles": [{
            "type": "sampled", "name": "p", "unit": "none", "startValue": 0, "endValue": 1,
            "samples": [[0], [0, 1]], "weights": [1e308, 1e308],
        }],
    }  # fmt: skip
    path.write_text(json.dumps(doc))
    for said in _read_all_ways(path):
        assert said.startswith(f"{path}: a count of 1e+308 is out of range") and "\n" not in said
    doc["profiles"][0]["samples"] = [[0], [0]]  # one stack: the sum is inf
    path.write_text(json.dumps(doc))
    for said in _read_all_ways(path):
        assert said.startswith(f"{path}: profile 'p': weights sum past the largest number")


def test_pprof_values_past_64_bits_in_all_are_refused_the_same_way(tmp_path: Path) -> None:
    """Two values of 2**63-1: "no samples" in view, 18446744073709551614 in diff --folded."""
    path = written(tmp_path, "p.pb.gz", "pprof")
    raw = parse_pprof(gzip.decompress(path.read_bytes()))
    for sample in raw.sample:
        sample.value[:] = [2**63 - 1] * len(sample.value)
    path.write_bytes(gzip.compress(raw.SerializeToString()))
    for said in _read_all_ways(path):
        assert said.startswith(f"{path}: a count of 4.61e+19 in all is out of range"), said


@pytest.mark.parametrize("fmt", ["folded", "speedscope"])
def test_gzipped_text_profiles_read_as_the_text_would(tmp_path: Path, fmt: str) -> None:
    """A gzipped folded file was refused as "not a pprof profile"."""
    plain = written(tmp_path, f"p.{fmt}", fmt)
    packed = tmp_path / f"p.{fmt}.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_saved(packed).stacks == read_saved(plain).stacks
    assert profile_io.load_tree(packed).tree == profile_io.load_tree(plain).tree


def test_a_gzip_bomb_is_refused_at_the_limit_holding_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit is MAX_READ_BYTES of inflated data (lowered here); inflating
    stops once it is passed (measured: a 600 MB bomb peaked at 617 MB of RSS
    with the 512 MiB limit, 1.09 GB before)."""
    monkeypatch.setattr(profile_io, "MAX_READ_BYTES", 4 * 2**20)
    monkeypatch.setattr(profile_io, "GUNZIP_STEP", 2**20)
    steps: list[int] = []
    real = zlib.decompressobj

    class Counting:
        def __init__(self, wbits: int) -> None:
            self._inflater = real(wbits=wbits)

        def decompress(self, data: bytes, most: int) -> bytes:
            out: bytes = self._inflater.decompress(data, most)
            steps.append(len(out))
            return out

        def __getattr__(self, name: str) -> object:
            return getattr(self._inflater, name)

    monkeypatch.setattr(zlib, "decompressobj", Counting)
    bomb = tmp_path / "bomb.pb.gz"
    bomb.write_bytes(gzip.compress(b"\0" * (64 * 2**20), compresslevel=1))
    with pytest.raises(ProfileFileError, match=r"inflates to more than 4 MiB"):
        read_saved(bomb)
    assert sum(steps) <= 5 * 2**20, "inflating went on past the limit"
