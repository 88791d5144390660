"""Broken files become reasons, never exceptions."""

from __future__ import annotations

import os
import random

import pytest

from bpftop.symbols.elf.index import ElfError, ElfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.frame import ElfVaddr, FileOffset, Unresolved


def _lookup_or_error(path: str) -> ElfIndex | ElfError:
    result = ElfIndex.load(path)
    if isinstance(result, ElfIndex):  # a partial index must still answer safely
        result.lookup(ElfVaddr(0x1000))
        result.lookup_offset(FileOffset(0x1000))
    return result


@pytest.mark.parametrize("keep", [0, 4, 16, 63, 64, 200, 1000, 4096, 6000, 9000, 14000])
def test_truncated_elf(built, tmp_path, keep: int) -> None:
    data = built.pie.read_bytes()
    assert keep < len(data)
    path = tmp_path / "truncated"
    path.write_bytes(data[:keep])
    result = _lookup_or_error(str(path))
    if keep < 64:  # not even an ELF header
        assert isinstance(result, ElfError) and result.reason is Unresolved.FILE_UNREADABLE


def test_random_bytes(tmp_path) -> None:
    rng = random.Random(1234)
    for i in range(20):
        path = tmp_path / f"random{i}"
        path.write_bytes(rng.randbytes(rng.randrange(1, 5000)))
        result = ElfIndex.load(str(path))
        assert isinstance(result, ElfError), i


def test_elf_header_then_garbage(built, tmp_path) -> None:
    rng = random.Random(99)
    data = bytearray(built.pie.read_bytes())
    for trial in range(20):
        corrupt = bytearray(data)
        for _ in range(200):
            corrupt[rng.randrange(16, len(corrupt))] = rng.randrange(256)
        path = tmp_path / f"corrupt{trial}"
        path.write_bytes(bytes(corrupt))
        _lookup_or_error(str(path))  # must not raise


def test_not_a_file_and_missing(tmp_path) -> None:
    assert isinstance(ElfIndex.load(str(tmp_path)), ElfError)
    assert isinstance(ElfIndex.load(str(tmp_path / "missing")), ElfError)
    assert ElfCache().load(str(tmp_path / "missing")) is None


def test_unreadable_mapped_file_gives_reason(tmp_path) -> None:
    from bpftop.symbols.process import ProcessSymbolizer

    process = ProcessSymbolizer(os.getpid(), ElfCache())
    assert process.maps is not None
    bogus = tmp_path / "bogus.so"
    bogus.write_bytes(b"\x7fELF" + bytes(100))
    from bpftop.symbols.proc.maps import MapEntry

    entry = MapEntry(0x10000, 0x20000, "r-xp", 0, "00:00", 1, str(bogus))
    frame = process._file_frame(entry, 0x10010)  # type: ignore[arg-type]
    assert frame.function is None and frame.reason is Unresolved.FILE_UNREADABLE
    assert frame.module == str(bogus) and frame.offset == 0x10
