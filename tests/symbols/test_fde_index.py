"""FDE ranges read from .eh_frame without running instructions: the same
ranges readelf lists, for Debian's libc, libgcc_s and python3.11; and the
function start an address falls in."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from bpftop.symbols.elf.sections import SectionData, read_sections
from bpftop.symbols.unwind.eh_frame import CfiError, fde_ranges
from bpftop.symbols.unwind.fde_index import FdeIndex

FILES = [
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/libgcc_s.so.1",
    "/usr/bin/python3.11",
]


def _readelf_ranges(path: str) -> list[tuple[int, int]]:
    text = subprocess.run(  # it exits 1 on libc, after warnings, with every FDE listed
        ["readelf", "--debug-dump=frames", path], check=False, capture_output=True, text=True
    ).stdout
    found = re.findall(r"FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", text)
    return sorted((int(a, 16), int(b, 16)) for a, b in found)


@pytest.mark.parametrize("path", FILES)
def test_the_ranges_readelf_lists(path: str) -> None:
    with open(path, "rb") as stream:
        found = read_sections(stream, (".eh_frame",))
    assert found is not None
    ranges = fde_ranges(found[1][".eh_frame"])
    assert len(ranges) > 200
    assert ranges == _readelf_ranges(path)


def test_start_of_an_address() -> None:
    index = FdeIndex([(0x2000, 0x2010), (0x1000, 0x1100), (0x1100, 0x1108)])
    assert len(index) == 3
    assert index.start_of(0x1000) == 0x1000 and index.start_of(0x10FF) == 0x1000
    assert index.start_of(0x1100) == 0x1100
    assert index.start_of(0x1108) is None and index.start_of(0xFFF) is None
    assert index.start_of(0x200F) == 0x2000 and index.start_of(0x2010) is None


def test_files_without_a_readable_eh_frame_give_an_empty_index(tmp_path: Path) -> None:
    text = tmp_path / "text"
    text.write_text("not an ELF file")
    assert len(FdeIndex.load([str(tmp_path / "missing"), str(text)])) == 0
    broken = SectionData(".eh_frame", 0x1000, b"\x10\x00\x00\x00\x04\x00\x00\x00", 8)
    with pytest.raises(CfiError):
        fde_ranges(broken)
