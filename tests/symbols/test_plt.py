"""PLT stubs named SYMBOL@plt, as objdump and perf name them (from .rela.plt,
through each stub's GOT slot), with and without IBT's .plt.sec; a size-0
``_init`` ends with .init instead of swallowing the PLT after it; a debug
file's names keep the stripped file's stubs."""

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

DEBIAN = ["/usr/bin/sqlite3", "/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11"]


def _objdump_stubs(path: Path | str) -> set[tuple[int, str]]:
    out = subprocess.run(
        ["objdump", "-d", "-j", ".plt", "-j", ".plt.sec", str(path)],
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
