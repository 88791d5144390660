"""PLT stubs named SYMBOL@plt, as objdump and perf name them (from .rela.plt,
through each stub's GOT slot), with and without IBT's .plt.sec, and the
.plt.got stubs (their slots named by .rela.dyn's GLOB_DAT relocations); a size-0
``_init`` ends with .init instead of swallowing the PLT after it; a debug
file's names keep the stripped file's stubs; a stripped library's .init and
.fini are _init and _fini (the loader runs _init, sampled when a program
starts: seen as libgcc_s.so.1+0x3000 in a record of a C++ program)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from bpftop.symbols.elf.debuginfo import DebugFinder
from bpftop.symbols.elf.index import ElfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.frame import ElfVaddr
from tests.symbols.conftest import FIXTURES, Built, DebugBuilt

DEBIAN = [
    "/usr/bin/sqlite3",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/bin/python3.11",
    "/usr/bin/as",
]
# Calls a function whose address it also takes: the linker puts its stub in .plt.got.
PLT_GOT = r"""
#include <string.h>
void *volatile keep;
int main(int argc, char **argv) { keep = (void *)&strlen; return (int)strlen(argv[0]) + argc; }
"""


def _objdump_stubs(path: Path | str) -> set[tuple[int, str]]:
    out = subprocess.run(
        ["objdump", "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", str(path)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return {(int(a, 16), n) for a, n in re.findall(r"^([0-9a-f]+) <(.+@plt)>:", out, re.M)}


def _stubs(index: ElfIndex) -> set[tuple[int, str]]:
    return {(start, name) for name, start, _ in index.functions() if name.endswith("@plt")}


@pytest.fixture(scope="module")
def ibt(built: Built) -> Path:
    out = built.dir / "ibt"
    flags = ["-O1", "-fcf-protection=full", "-Wl,-z,ibtplt"]
    source = str(FIXTURES / "prog.c")
    subprocess.run(["gcc", *flags, "-o", str(out), source], check=True, capture_output=True)
    return out


@pytest.mark.parametrize("path", DEBIAN)
def test_debian_binaries_stubs_as_objdump_names_them(path: str) -> None:
    if not Path(path).exists():
        pytest.skip(f"{path} is not installed (apt-get install sqlite3)")
    index = ElfIndex.load(path)
    assert isinstance(index, ElfIndex)
    expected = _objdump_stubs(path)
    assert len(expected) > 40  # libc's include *ABS*+0x...@plt (IRELATIVE)
    assert _stubs(index) == expected


def test_fixture_stubs_with_and_without_ibt(built: Built, ibt: Path) -> None:
    for path in (built.pie, built.nopie, ibt):
        index = ElfIndex.load(str(path))
        assert isinstance(index, ElfIndex)
        expected = _objdump_stubs(path)
        assert expected and _stubs(index) == expected, path
    sections = subprocess.run(["readelf", "-SW", str(ibt)], capture_output=True, text=True).stdout
    assert ".plt.sec" in sections


@pytest.mark.parametrize("flags", [[], ["-fcf-protection=full", "-Wl,-z,ibtplt"]], ids=["8", "ibt"])
def test_plt_got_stubs_as_objdump_names_them(tmp_path: Path, flags: list[str]) -> None:
    (tmp_path / "pltgot.c").write_text(PLT_GOT)
    out = tmp_path / "pltgot"
    subprocess.run(["gcc", "-O1", *flags, "-o", str(out), str(tmp_path / "pltgot.c")], check=True)
    sections = subprocess.run(["readelf", "-SW", str(out)], capture_output=True, text=True).stdout
    assert ".plt.got" in sections and ".rela.plt" not in sections
    index = ElfIndex.load(str(out))
    assert isinstance(index, ElfIndex)
    expected = _objdump_stubs(out)
    assert {name for _, name in expected} >= {"strlen@plt", "__cxa_finalize@plt"}
    assert _stubs(index) == expected
    start = next(at for at, name in expected if name == "strlen@plt")
    assert index.lookup(ElfVaddr(start + 3)) == ("strlen@plt", 3)


def test_init_of_size_zero_does_not_swallow_the_plt(built: Built) -> None:
    index = ElfIndex.load(str(built.pie))
    assert isinstance(index, ElfIndex)
    stubs = sorted(_stubs(index))
    start, name = stubs[0]
    assert index.lookup(ElfVaddr(start + 6)) == (name, 6)
    plt_header = start - 16
    hit = index.lookup(ElfVaddr(plt_header + 2))
    assert hit is None or hit[0] != "_init", hit


def test_a_debug_files_names_keep_the_stubs(debug_built: DebugBuilt) -> None:
    cache = ElfCache(debug_finder=DebugFinder(str(debug_built.debug_root)))
    index = cache.load(str(debug_built.linked))
    assert isinstance(index, ElfIndex) and index.source.startswith("debug:")
    assert _stubs(index) == _objdump_stubs(debug_built.linked)
    assert any(name == "fix_alpha" for name, _, _ in index.functions())


def test_a_stripped_librarys_init_and_fini_are_named() -> None:
    path = "/lib/x86_64-linux-gnu/libgcc_s.so.1"
    index = ElfIndex.load(path)
    assert isinstance(index, ElfIndex) and index.source == "SHT_DYNSYM"
    out = subprocess.run(["readelf", "-SW", path], check=True, capture_output=True, text=True)
    for section, name in ((".init", "_init"), (".fini", "_fini")):
        found = re.search(
            rf"\s{re.escape(section)}\s+PROGBITS\s+([0-9a-f]+)\s+\S+\s+([0-9a-f]+)", out.stdout
        )
        assert found, section
        start, size = int(found[1], 16), int(found[2], 16)
        assert index.lookup(ElfVaddr(start + size - 1)) == (name, size - 1)
