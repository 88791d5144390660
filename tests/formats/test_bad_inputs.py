"""Inputs that used to escape as hangs, internal errors or silent nonsense: each is now a
one-line error (exit 2) naming the file, or read with what was skipped counted."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from bpftop.tui.formats import profile_io
from bpftop.tui.formats.profile_io import load_tree, read_saved, write_saved
from bpftop.tui.formats.registry import ProfileFileError
from bpftop.tui.formats.saved import NANOSECONDS, from_tree
from tests.conftest import BPFTOP
from tests.formats.test_saved import META, sample_profile

GOOD = "app;main;a 3\napp;main;b 2\n"


def bpftop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BPFTOP), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpftop: "), done.stderr
    assert "internal error" not in lines[0] and all(w in lines[0] for w in words), lines[0]


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_view_of_an_endless_device_is_refused(device: str) -> None:
    one_line_error(bpftop("view", device), device, "not a regular file", "512 MiB")


def test_diff_folded_of_an_endless_device_is_refused(tmp_path: Path) -> None:
    good = tmp_path / "good.folded"
    good.write_text(GOOD)
    one_line_error(bpftop("diff", "--folded", "/dev/zero", str(good)), "/dev/zero", "512 MiB")


def test_a_fifo_is_read_up_to_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_io, "MAX_READ_BYTES", 1000)
    with pytest.raises(ProfileFileError, match="not a regular file"):
        read_saved("/dev/zero")
    fifo = tmp_path / "p.fifo"
    subprocess.run(["mkfifo", str(fifo)], check=True)
    writer = subprocess.Popen(["sh", "-c", f"printf '{GOOD}' > {fifo}"])
    assert read_saved(fifo).total == 5
    writer.wait(10)


def test_one_bad_utf8_byte_skips_only_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.folded"
    path.write_bytes(b"app;main;a 3\napp;m\xffin;b 2\napp;main;c 4")
    saved = read_saved(path)
    assert saved.skipped == 1 and saved.total == 7
    loaded = load_tree(path)
    assert loaded.skipped == 1 and loaded.tree.total_count == 7
    done = bpftop("diff", "--folded", str(path), str(path))
    assert done.returncode == 0 and "1 unreadable lines/samples skipped" in done.stderr
    assert done.stdout.splitlines() == ["app;main;a 3 3", "app;main;c 4 4"]


@pytest.mark.parametrize("text", ["", "\n\n  \n", "no counts here\nnor here\n"])
def test_a_file_without_samples_is_an_error(text: str, tmp_path: Path) -> None:
    path = tmp_path / "empty.folded"
    path.write_text(text)
    with pytest.raises(ProfileFileError, match=f"no samples in {path}"):
        load_tree(path)
    with pytest.raises(ProfileFileError, match=f"no samples in {path}"):
        read_saved(path)
    one_line_error(bpftop("view", str(path)), "no samples in", str(path))


def test_a_count_beyond_64_bits_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "big.folded"
    path.write_text(GOOD + "app;main;c 99999999999999999999\n")
    for reader in (load_tree, read_saved):
        with pytest.raises(ProfileFileError, match=f"{path} line 3: count 9+ does not fit"):
            reader(path)
    one_line_error(bpftop("diff", "--folded", str(path), str(path)), f"{path} line 3")


def test_diff_of_unlike_profiles_warns(tmp_path: Path) -> None:
    cpu, offcpu = tmp_path / "cpu.speedscope.json", tmp_path / "off.pb.gz"
    saved = from_tree(sample_profile().tree(), META)
    write_saved(saved, cpu, "speedscope")
    off_meta = replace(META, probe="offcpu", frequency_hz=0, unit=NANOSECONDS)
    write_saved(replace(saved, meta=off_meta), offcpu, "pprof")
    done = bpftop("diff", "--folded", str(cpu), str(offcpu))
    assert done.returncode == 0
    assert "warning: cpu.speedscope.json and off.pb.gz measured different things" in done.stderr
    assert "samples/events vs nanoseconds" in done.stderr
    same = bpftop("diff", "--folded", str(cpu), str(cpu))
    assert same.returncode == 0 and "warning" not in same.stderr


def test_bad_bytes_in_speedscope_names_are_replaced(tmp_path: Path) -> None:
    path = tmp_path / "p.speedscope.json"
    write_saved(from_tree(sample_profile().tree(), META), path, "speedscope")
    path.write_bytes(path.read_bytes().replace(b'"name":"run"', b'"name":"r\xffn"'))
    saved = read_saved(path)
    assert "r\ufffdn" in {f.name for s in saved.stacks for f in s.frames}
    out = tmp_path / "back.folded"
    write_saved(saved, out, "folded")  # writable again: no lone surrogates
    assert "r\ufffdn" in out.read_text()


def test_sniffing_is_by_structure(tmp_path: Path) -> None:
    cases = {
        "<module> (t.py:1);spin (t.py:3) 4\n": 4,  # py-spy raw: folded, not XML
        "# a comment line\napp;main 2\n": 2,
        "<frame>;x 1 2\n": 2,  # a two-count diff line
    }
    for text, total in cases.items():
        path = tmp_path / "p.txt"
        path.write_text(text)
        assert read_saved(path).total == total, text
    svg = tmp_path / "p.svg"
    write_saved(from_tree(sample_profile().tree(), META), svg, "svg")
    with pytest.raises(ProfileFileError, match="looks like XML/SVG"):
        read_saved(svg)
