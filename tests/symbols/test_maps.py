"""Parsing /proc/PID/maps text and finding the mapping of an address."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from bpftop.symbols.frame import Address
from bpftop.symbols.proc.maps import ProcessMaps, parse_line, parse_maps

# A real-looking dump: trailing blanks on anonymous lines, junk lines, a
# deleted file whose path holds spaces, the special regions.
DUMP = (Path(__file__).parent / "fixtures" / "maps_dump.txt").read_text()


def test_parses_every_well_formed_line_and_skips_junk() -> None:
    entries = parse_maps(DUMP)
    assert len(entries) == 13
    assert {e.path for e in entries} >= {"[heap]", "[stack]", "[vdso]", "[vsyscall]", ""}


def test_fields_of_a_file_mapping() -> None:
    entry = parse_line(DUMP.splitlines()[6])
    assert entry is not None
    assert (entry.start, entry.end) == (0x7F1B2D228000, 0x7F1B2D3BD000)
    assert entry.perms == "r-xp" and entry.executable and entry.is_file
    assert (entry.offset, entry.dev, entry.inode) == (0x28000, "fd:01", 1840361)
    assert entry.path == "/usr/lib/x86_64-linux-gnu/libc.so.6" and not entry.deleted
    assert entry.range_name == "7f1b2d228000-7f1b2d3bd000"


def test_deleted_file_with_spaces_in_its_path() -> None:
    entry = parse_line(DUMP.splitlines()[7])
    assert entry is not None
    assert entry.path == "/opt/my app/lib/libplug in.so"
    assert entry.deleted


def test_anonymous_and_special_regions() -> None:
    maps = ProcessMaps.from_text(DUMP)
    anon = maps.find(0x7F1B2D600010)
    assert anon is not None and anon.path == "" and anon.executable and not anon.is_file
    vdso = maps.find(0x7FFD5E3F4123)
    assert vdso is not None and vdso.path == "[vdso]" and not vdso.is_file
    heap = maps.find(0x55D0C4B8E000)
    assert heap is not None and heap.path == "[heap]" and not heap.executable


def test_lookup_boundaries() -> None:
    maps = ProcessMaps.from_text(DUMP)
    first = maps.find(0x55D0C3A4B000)
    assert first is not None and first.offset == 0
    last_byte = maps.find(0x55D0C3A4CFFF)
    assert last_byte is first
    second = maps.find(0x55D0C3A4D000)  # end is exclusive: the next mapping
    assert second is not None and second.offset == 0x2000
    assert maps.find(0x1000) is None  # before everything
    assert maps.find(0x55D0C3A55000) is None  # in a hole
    assert maps.find(0xFFFFFFFFFFFFFFFF) is None  # after everything


def test_lookup_agrees_with_linear_scan() -> None:
    entries = parse_maps(DUMP)
    maps = ProcessMaps(reversed(entries))  # order of input does not matter
    probes = [e.start for e in entries] + [e.end - 1 for e in entries] + [e.end for e in entries]
    for addr in probes:
        expected = next((e for e in entries if e.start <= addr < e.end), None)
        assert maps.find(addr) == expected, hex(addr)


def test_file_offset_normalization() -> None:
    maps = ProcessMaps.from_text(DUMP)
    entry = maps.find(0x7F1B2D228000 + 0x1234)
    assert entry is not None
    assert entry.file_offset(Address(0x7F1B2D228000 + 0x1234)) == 0x28000 + 0x1234


def test_malformed_lines_give_none() -> None:
    bad = ["", "garbage", "1-2 r-xp", "zz-10 r-xp 0 fd:01 1 /x", "10-20 r-x 0 fd:01 1 /x"]
    bad += ["10-20 r-xp 0 fd01 1 /x", "10-20 r-xp 0 fd:01 -1 /x", "20-10 r-xp 0 fd:01 1 /x"]
    for line in bad:
        assert parse_line(line) is None, line


def test_own_maps_parse_completely() -> None:
    with open("/proc/self/maps") as f:
        text = f.read()
    entries = parse_maps(text)
    assert len(entries) == len(text.splitlines())
    maps = ProcessMaps(entries)
    code_addr = ctypes.cast(ctypes.pythonapi.Py_IsInitialized, ctypes.c_void_p).value
    assert code_addr is not None
    code = maps.find(code_addr)
    assert code is not None and code.executable and code.is_file
    assert os.path.exists(code.path)
