"""The ELF index against ``nm`` and ``readelf`` for gcc-built fixtures."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bpftop.symbols.elf.index import ElfIndex, _Symbol
from bpftop.symbols.elf.load_segments import PAGE_MASK, PF_X, LoadSegment
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.frame import ElfVaddr, FileOffset
from bpftop.symbols.proc.maps import FileId

LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")


def _index(path: Path) -> ElfIndex:
    index = ElfIndex.load(str(path))
    assert isinstance(index, ElfIndex), index
    return index


def _check_against_nm(index: ElfIndex, symbols) -> None:
    starts = {start for _, start, _ in index.functions()}
    by_start: dict[int, set[str]] = {}
    for sym in symbols:
        by_start.setdefault(sym.start, set()).add(sym.name)
    assert symbols, "nm found no sized functions: the fixture is wrong"
    for sym in symbols:
        aliases = by_start[sym.start]
        for offset in sorted({0, sym.size // 2, sym.size - 1}):
            hit = index.lookup(ElfVaddr(sym.start + offset))
            assert hit is not None and hit[0] in aliases and hit[1] == offset, (sym, offset)
        past = index.lookup(ElfVaddr(sym.start + sym.size))
        if sym.start + sym.size not in starts:
            assert past is None or past[0] not in aliases, sym
    nm_sized = {(s.start, s.size) for s in symbols}
    nm_starts = {s.start for s in symbols}
    for name, start, size in index.functions():
        # PLT stubs are ours; a size-0 symbol (``_init``) is sized to its section's end
        if size and not name.endswith("@plt") and start in nm_starts:
            assert (start, size) in nm_sized, (name, start, size)


@pytest.mark.parametrize("which", ["pie", "nopie", "lib", "pie_lib", "dl"])
def test_symtab_matches_nm(built, nm, which: str) -> None:
    path = getattr(built, which)
    index = _index(path)
    assert index.source == "SHT_SYMTAB"
    _check_against_nm(index, nm(path))


def test_fixture_functions_are_where_nm_says(built, nm) -> None:
    index = _index(built.pie)
    names = {name for name, _, _ in index.functions()}
    assert {"fix_alpha", "fix_beta", "fix_gamma", "main"} <= names
    lib_names = {name for name, _, _ in _index(built.lib).functions()}
    assert {"fixlib_work", "fixlib_inner", "fixlib_report"} <= lib_names


def test_stripped_with_rdynamic_falls_back_to_dynsym(built, nm) -> None:
    assert nm(built.dynsym) == []  # no .symtab left
    index = _index(built.dynsym)
    assert index.source == "SHT_DYNSYM"
    _check_against_nm(index, nm(built.dynsym, dynamic=True))
    assert "fix_beta" in {name for name, _, _ in index.functions()}


def test_stripped_without_exports_has_no_symbols(built) -> None:
    index = _index(built.stripped)
    assert not index.has_symbols
    assert index.segments  # the segments are still known
    assert index.lookup(ElfVaddr(0x1200)) is None


@pytest.mark.skipif(not LIBC.exists(), reason="no libc.so.6 at the Debian path")
def test_libc_dynsym_including_ifuncs(nm) -> None:
    symbols = nm(LIBC, dynamic=True)
    ifunc_starts = {s.start for s in symbols if s.name == "memcpy" and s.ifunc}
    assert ifunc_starts, "libc's memcpy is expected to be an IFUNC"
    index = _index(LIBC)
    _check_against_nm(index, symbols)
    hit = index.lookup(ElfVaddr(ifunc_starts.pop()))
    assert hit is not None and hit[1] == 0


READELF_FLAGS = {"R": 4, "W": 2, "E": PF_X}


def _readelf_loads(path: Path) -> list[LoadSegment]:
    text = subprocess.run(["readelf", "-lW", str(path)], capture_output=True, text=True).stdout
    loads = []
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["LOAD"]:
            offset, vaddr, _, filesz, memsz = (int(p, 16) for p in parts[1:6])
            flags = sum(
                bit for letter, bit in READELF_FLAGS.items() if letter in "".join(parts[6:-1])
            )
            loads.append(LoadSegment(offset, filesz, vaddr, memsz, flags))
    return loads


@pytest.mark.parametrize("which", ["pie", "nopie", "lib"])
def test_segments_and_offset_to_vaddr(built, which: str) -> None:
    path = getattr(built, which)
    index = _index(path)
    loads = _readelf_loads(path)
    assert list(index.segments) == loads and loads
    for seg in loads:
        for delta in (0, seg.filesz // 2, seg.filesz - 1):
            at = FileOffset(seg.offset + delta)
            assert index.vaddr_for_offset(at) == seg.vaddr + delta
            if seg.flags & PF_X:  # code, in the mapping the kernel makes of its segment
                mapped = index.vaddr_for_offset(at, seg.offset & PAGE_MASK, executable=True)
                assert mapped == seg.vaddr + delta
    text = next(s for s in loads if s.offset > 0)  # PIE/lib: vaddr == offset is not assumed
    beyond = FileOffset(max(s.offset + s.filesz for s in loads) + 0x10000)
    assert index.vaddr_for_offset(beyond) is None
    assert text.vaddr - text.offset == (0x400000 if which == "nopie" else 0) or which == "lib"


def test_sized_symbol_preferred_and_end_respected() -> None:
    seg = (LoadSegment(0, 0x1000, 0, 0x1000, PF_X),)
    symbols = [
        _Symbol(0x100, 0, "label_alias", (False, True, 0)),
        _Symbol(0x100, 0x20, "real_function", (True, True, 0)),
        _Symbol(0x200, 0x100, "outer", (True, True, 0)),
        _Symbol(0x240, 0x10, "nested", (True, False, 0)),
        _Symbol(0x400, 0, "unsized", (False, True, 0)),
    ]
    index = ElfIndex(seg, symbols, "test")
    assert index.lookup(ElfVaddr(0x100)) == ("real_function", 0)
    assert index.lookup(ElfVaddr(0x11F)) == ("real_function", 0x1F)
    assert index.lookup(ElfVaddr(0x120)) is None  # past its end, before the next
    assert index.lookup(ElfVaddr(0x245)) == ("nested", 5)
    assert index.lookup(ElfVaddr(0x260)) == ("outer", 0x60)  # past nested, still in outer
    assert index.lookup(ElfVaddr(0x300)) is None
    assert index.lookup(ElfVaddr(0x999)) == ("unsized", 0x599)
    assert index.lookup(ElfVaddr(0xFF)) is None


def test_cache_parses_a_file_once(built) -> None:
    cache = ElfCache()
    first = cache.load(str(built.lib))
    again = cache.load(str(built.lib))
    assert first is again and cache.parses == 1
    file_id = FileId.of_path(str(built.lib))
    assert file_id is not None and cache.get(file_id) is first
    assert cache.load(str(built.pie), expected=file_id) is None  # identity mismatch
    assert cache.load(str(built.dir / "missing")) is None
    assert cache.parses == 1


def test_cache_reparses_a_replaced_file(built, tmp_path) -> None:
    copy = tmp_path / "lib.so"
    copy.write_bytes(built.lib.read_bytes())
    cache = ElfCache()
    first = cache.load(str(copy))
    copy.unlink()
    copy.write_bytes(built.pie.read_bytes())
    second = cache.load(str(copy))
    assert cache.parses == 2 and first is not second
    assert isinstance(second, ElfIndex) and "fix_alpha" in {n for n, _, _ in second.functions()}


def test_cache_evicts_least_recently_used(built) -> None:
    cache = ElfCache(max_files=2)
    for path in (built.pie, built.nopie, built.pie, built.lib):
        cache.load(str(path))
    assert len(cache) == 2 and cache.parses == 3
    cache.load(str(built.pie))  # still cached (used recently)
    assert cache.parses == 3
    cache.load(str(built.nopie))  # evicted earlier
    assert cache.parses == 4
