"""The on-disk index cache: keyed by build-id, validated, refreshed when a
debug file appears, and fast."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bpftop.symbols.elf.debuginfo import DebugFinder
from bpftop.symbols.elf.disk_cache import DiskCache, default_cache_dir, read_build_id
from bpftop.symbols.elf.index import ElfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.symbolizer import Symbolizer

LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")
PYTHON = Path("/usr/bin/python3.11")


def _cache(folder: Path, debug_root: Path | None = None) -> ElfCache:
    finder = DebugFinder(str(debug_root)) if debug_root else None
    return ElfCache(disk_cache=DiskCache(str(folder)), debug_finder=finder)


def _entry(folder: Path, index: ElfIndex, binary: Path) -> Path:
    return folder / f"{index.build_id}-{binary.stat().st_size}.idx"


def test_stripped_copy_does_not_take_the_originals_entry(built, tmp_path) -> None:
    """Same build-id, other symbols: each file keeps its own entry."""
    stripped = tmp_path / "stripped"
    shutil.copy(built.pie, stripped)
    subprocess.run(["strip", "-s", str(stripped)], check=True)
    bare = _cache(tmp_path / "c", tmp_path / "no-debug").load(str(stripped))
    assert isinstance(bare, ElfIndex) and not bare.has_symbols
    full = _cache(tmp_path / "c", tmp_path / "no-debug").load(str(built.pie))
    assert isinstance(full, ElfIndex) and full.build_id == bare.build_id
    assert full.has_symbols and full.source == "SHT_SYMTAB"
    again = _cache(tmp_path / "c", tmp_path / "no-debug").load(str(stripped))
    assert isinstance(again, ElfIndex) and not again.has_symbols


def test_build_id_read_without_pyelftools(debug_built) -> None:
    with open(debug_built.full, "rb") as stream:
        assert read_build_id(stream) == debug_built.build_id
    for junk in (b"", b"\x7fELF", b"\x7fELF\x02\x01" + bytes(58), os.urandom(4096)):
        assert read_build_id(io.BytesIO(junk)) is None


def test_second_cache_loads_from_disk(built, tmp_path) -> None:
    first = _cache(tmp_path)
    index = first.load(str(built.pie))
    assert isinstance(index, ElfIndex) and index.build_id
    assert first.parses == 1 and first.disk_cache is not None and first.disk_cache.writes == 1
    assert _entry(tmp_path, index, built.pie).exists()
    second = _cache(tmp_path)
    again = second.load(str(built.pie))
    assert isinstance(again, ElfIndex) and second.parses == 0
    assert second.disk_cache is not None and second.disk_cache.hits == 1
    assert list(again.functions()) == list(index.functions())
    assert again.segments == index.segments and again.source == index.source


def test_damaged_entry_is_dropped_and_rebuilt(built, tmp_path) -> None:
    index = _cache(tmp_path).load(str(built.pie))
    assert isinstance(index, ElfIndex)
    entry = _entry(tmp_path, index, built.pie)
    for damage in (b"", b"garbage", entry.read_bytes()[:-7], b"\xfb" + bytes(100)):
        entry.write_bytes(damage)
        cache = _cache(tmp_path)
        again = cache.load(str(built.pie))
        assert isinstance(again, ElfIndex) and cache.parses == 1
        assert list(again.functions()) == list(index.functions())


def test_index_without_debug_file_is_rebuilt_once_one_appears(debug_built, tmp_path) -> None:
    root = tmp_path / "root"
    stale = _cache(tmp_path, root).load(str(debug_built.by_build_id))
    assert isinstance(stale, ElfIndex) and not stale.has_symbols
    shutil.copytree(debug_built.id_root, root)  # "apt-get install foo-dbgsym"
    cache = _cache(tmp_path, root)
    fresh = cache.load(str(debug_built.by_build_id))
    assert isinstance(fresh, ElfIndex) and fresh.source.startswith("debug:")
    assert cache.disk_cache is not None and cache.disk_cache.hits == 0


def test_cache_is_bounded(built, tmp_path) -> None:
    disk = DiskCache(str(tmp_path), max_entries=2)
    for path in (built.pie, built.nopie, built.lib, built.dl):
        ElfCache(disk_cache=disk).load(str(path))
        time.sleep(0.01)  # distinct mtimes
    kept = sorted(p.name for p in tmp_path.glob("*.idx"))
    assert len(kept) == 2 and disk.writes == 4
    newest = ElfCache().load(str(built.dl))
    assert isinstance(newest, ElfIndex) and _entry(tmp_path, newest, built.dl).name in kept


def test_environment_controls_the_folder(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("BPFTOP_SYMBOL_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == str(tmp_path)
    cache = Symbolizer().elf_cache.disk_cache
    assert cache is not None and cache.directory == str(tmp_path)
    monkeypatch.setenv("BPFTOP_SYMBOL_CACHE_DIR", "")
    assert default_cache_dir() is None and Symbolizer().elf_cache.disk_cache is None
    monkeypatch.delenv("BPFTOP_SYMBOL_CACHE_DIR")
    assert default_cache_dir() == "/var/cache/bpftop/symbols"


@pytest.mark.skipif(not (LIBC.exists() and PYTHON.exists()), reason="needs Debian's python3.11")
def test_warm_disk_cache_is_fast(tmp_path) -> None:
    _cache(tmp_path).load(str(LIBC))
    _cache(tmp_path).load(str(PYTHON))
    best = float("inf")
    for _ in range(3):
        cache = _cache(tmp_path)
        started = time.perf_counter()
        for path in (LIBC, PYTHON):
            assert isinstance(cache.load(str(path)), ElfIndex)
        best = min(best, time.perf_counter() - started)
        assert cache.parses == 0
    assert best < 0.050, f"warm load of libc + python3.11 took {best * 1000:.1f} ms"
