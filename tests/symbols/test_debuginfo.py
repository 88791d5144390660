"""Separate debug files: build-id, .gnu_debuglink (three places, CRC checked),
MiniDebugInfo, and Debian's real libc6-dbg."""

from __future__ import annotations

import lzma
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bpftop.symbols.elf.debuginfo import DebugFinder, build_id_path, file_crc32
from bpftop.symbols.elf.index import ElfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.frame import ElfVaddr
from bpftop.symbols.symbolizer import Symbolizer
from tests.symbols.conftest import nm_functions

LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")


def _cache(root: Path) -> ElfCache:
    return ElfCache(debug_finder=DebugFinder(str(root)))


def _loaded(cache: ElfCache, path: Path) -> ElfIndex:
    index = cache.load(str(path))
    assert isinstance(index, ElfIndex), index
    return index


def _names_like_full(index: ElfIndex, full: Path) -> None:
    for sym in nm_functions(full):
        if sym.name.startswith("fix_") or sym.name == "main":
            assert index.lookup(ElfVaddr(sym.start + sym.size // 2)) == (
                sym.name,
                sym.size // 2,
            )


@pytest.mark.parametrize("which", ["linked", "linked_subdir", "linked_root", "by_build_id"])
def test_stripped_binary_named_by_its_debug_file(debug_built, which: str) -> None:
    stripped = getattr(debug_built, which)
    assert nm_functions(stripped) == []  # really stripped
    own = ElfIndex.load(str(stripped))
    assert isinstance(own, ElfIndex) and not own.has_symbols
    root = debug_built.id_root if which == "by_build_id" else debug_built.debug_root
    index = _loaded(_cache(root), stripped)
    assert index.source.startswith("debug:"), index.source
    assert (".build-id" in index.source) == (which == "by_build_id")
    assert index.segments == own.segments  # addresses come from the stripped file
    _names_like_full(index, debug_built.full)


def test_debuglink_with_wrong_crc_is_refused(debug_built, tmp_path) -> None:
    # (an empty debug root: the shared build-id file would name it otherwise)
    index = _loaded(_cache(tmp_path), debug_built.bad_crc)
    assert not index.has_symbols and index.source == "none"
    assert str(debug_built.dir / "badcrc.debug") in index.debug_searched


def test_debuglink_and_build_id_are_read(debug_built) -> None:
    index = ElfIndex.load(str(debug_built.linked))
    assert isinstance(index, ElfIndex) and index.debuglink is not None
    assert index.debuglink.name == "linked.debug"
    assert index.debuglink.crc == file_crc32(str(debug_built.dir / "linked.debug"))
    assert index.build_id == debug_built.build_id
    no_link = ElfIndex.load(str(debug_built.by_build_id))
    assert isinstance(no_link, ElfIndex) and no_link.debuglink is None


def test_candidates_in_order(tmp_path) -> None:
    from bpftop.symbols.elf.index import DebugLink

    finder = DebugFinder("/dbg")
    found = [
        c.path
        for c in finder.candidates("/usr/lib/libx.so", "abcdef", DebugLink("x.debug", 7), "/r")
    ]
    assert found == [
        "/r/dbg/.build-id/ab/cdef.debug",
        "/dbg/.build-id/ab/cdef.debug",
        "/r/usr/lib/x.debug",
        "/r/usr/lib/.debug/x.debug",
        "/r/dbg/usr/lib/x.debug",
        "/usr/lib/x.debug",
        "/usr/lib/.debug/x.debug",
        "/dbg/usr/lib/x.debug",
    ]
    assert build_id_path("/d", "../../etc") is None and build_id_path("/d", "ab") is None
    assert finder.find("/nowhere/x", None, None) == (None, ())


def test_no_debug_file_found_lists_where_it_looked(built, tmp_path) -> None:
    index = _loaded(_cache(tmp_path), built.stripped)
    assert not index.has_symbols and index.debug_searched  # the build-id path at least
    assert all(str(tmp_path) in p or "/usr/lib/debug" not in p for p in index.debug_searched)


def test_live_process_stripped_with_debuglink(debug_built, run) -> None:
    prog = run(debug_built.linked)
    sym = Symbolizer(elf_cache=_cache(debug_built.debug_root))
    frame = sym.user_frames(prog.pid, [prog.addrs["fix_beta"] + 7])[0]
    assert (frame.function, frame.offset, frame.reason) == ("fix_beta", 7, None)


def test_minidebuginfo(built, tmp_path) -> None:
    """A .gnu_debugdata section (xz ELF with a .symtab) names a stripped file."""
    if shutil.which("xz") is None and not hasattr(lzma, "compress"):
        pytest.skip("no xz")
    mini = tmp_path / "mini.elf"
    subprocess.run(["objcopy", "--only-keep-debug", "--strip-debug", str(built.pie), str(mini)],
                   check=True)  # fmt: skip
    blob = tmp_path / "mini.xz"
    blob.write_bytes(lzma.compress(mini.read_bytes(), format=lzma.FORMAT_XZ))
    target = tmp_path / "with-mini"
    subprocess.run(["objcopy", "--add-section", f".gnu_debugdata={blob}", str(built.stripped),
                    str(target)], check=True)  # fmt: skip
    index = ElfIndex.load(str(target))
    assert isinstance(index, ElfIndex) and "minidebuginfo" in index.source
    _names_like_full(index, built.pie)


@pytest.mark.skipif(not LIBC.exists(), reason="no Debian libc")
def test_debian_libc6_dbg_names_libc_internal_functions(run, built) -> None:
    libc = ElfIndex.load(str(LIBC))
    assert isinstance(libc, ElfIndex) and libc.build_id
    debug = build_id_path("/usr/lib/debug", libc.build_id)
    assert debug is not None
    if not os.path.exists(debug):
        pytest.skip("libc6-dbg is not installed (scripts/setup.sh installs it)")
    dynamic = {s.name for s in nm_functions(LIBC, dynamic=True)}
    internal = {s.name: s for s in nm_functions(Path(debug))}
    assert "__libc_start_call_main" in internal and "__libc_start_call_main" not in dynamic
    index = ElfCache().load(str(LIBC))
    assert isinstance(index, ElfIndex) and index.source == f"debug:{debug}"
    target = internal["__libc_start_call_main"]
    assert index.lookup(ElfVaddr(target.start + 5)) == ("__libc_start_call_main", 5)
    # and in a live process: main's caller is __libc_start_call_main
    prog = run(built.pie)
    sym = Symbolizer()
    addr = _libc_address(sym, prog.pid, libc, target.start + 9)
    frame = sym.user_frames(prog.pid, [addr])[0]
    assert (frame.function, frame.offset) == ("__libc_start_call_main", 9)


def _libc_address(sym: Symbolizer, pid: int, libc: ElfIndex, vaddr: int) -> int:
    """Where libc's ELF vaddr ``vaddr`` is mapped in ``pid``."""
    maps = sym.prepare(pid).maps
    assert maps is not None
    entry = next(e for e in maps.entries if e.path.endswith("libc.so.6") and e.executable)
    text = next(s for s in libc.segments if s.offset <= entry.offset < s.offset + s.filesz)
    return entry.start + (vaddr - text.vaddr + text.offset) - entry.offset


@pytest.mark.skipif(not LIBC.exists(), reason="no Debian libc")
def test_debug_file_lines_outlive_the_process_that_found_it(run, built) -> None:
    """The shared index must not remember the debug file as /proc/PID/root/...
    of the first process: once it exits, later processes still get file:line."""
    libc = ElfIndex.load(str(LIBC))
    assert isinstance(libc, ElfIndex) and libc.build_id
    debug = build_id_path("/usr/lib/debug", libc.build_id)
    if debug is None or not os.path.exists(debug):
        pytest.skip("libc6-dbg is not installed (scripts/setup.sh installs it)")
    start = {s.name: s for s in nm_functions(Path(debug))}["__libc_start_call_main"].start
    sym = Symbolizer(elf_cache=ElfCache())
    first = run(built.pie)
    frame = sym.user_frames(first.pid, [_libc_address(sym, first.pid, libc, start + 9)])[0]
    assert frame.function == "__libc_start_call_main"
    index = sym.elf_cache.load(str(LIBC))
    assert isinstance(index, ElfIndex) and index.source == f"debug:{debug}"
    first.finish()
    second = run(built.pie)
    (line,) = sym.source_lines(second.pid, [_libc_address(sym, second.pid, libc, start + 9)])
    assert line is not None and line[1] > 0, line
