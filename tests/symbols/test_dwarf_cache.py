"""The on-disk cache of DWARF answers: equal to pyelftools', used without
opening the file, refused when damaged or another file's, and off when asked."""

from __future__ import annotations

import glob
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from bpftop.symbols.dwarf import index as dwarf_module
from bpftop.symbols.dwarf.cache import EAGER_UNITS, SAVE_INTERVAL_S, DwarfCache
from bpftop.symbols.dwarf.index import DwarfIndex
from bpftop.symbols.elf.disk_cache import DiskCache
from bpftop.symbols.elf.index import ElfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.symbolizer import Symbolizer
from tests.symbols.conftest import nm_functions

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
UNITS = 24  # compile units of the many-units fixture: more than EAGER_UNITS


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.dwarf"))


def _code_addresses(path: Path) -> list[int]:
    """Every address of every function of ``path``."""
    return [a for s in nm_functions(path) for a in range(s.start, s.start + s.size)]


@pytest.fixture(scope="module")
def many_units(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A program of UNITS compile units, each with functions inlined into one."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the DWARF fixture")
    out = tmp_path_factory.mktemp("many units")
    sources = []
    for n in range(UNITS):
        source = out / f"unit{n}.c"
        source.write_text(
            "volatile unsigned long sink;\n" * (n == 0)
            + "extern volatile unsigned long sink;\n" * (n > 0)
            + f"static inline unsigned long leaf{n}(unsigned long x)"
            + f" {{ return x * {n + 3} ^ sink; }}\n"
            + f"static inline unsigned long mid{n}(unsigned long x) {{ sink = leaf{n}(x);"
            + f" return leaf{n}(x + 1); }}\n"
            + f"__attribute__((noinline)) unsigned long outer{n}(unsigned long n) {{\n"
            + f"  unsigned long t = 0; for (unsigned long i = 0; i < n; i++) t += mid{n}(i);"
            + " return t; }\n"
        )
        sources.append(str(source))
    main = out / "main.c"
    main.write_text("int main(void) { return 0; }\n")
    binary = out / "many"
    args = ["gcc", "-O2", "-g", "-Wl,--build-id", "-o", str(binary), *sources, str(main)]
    subprocess.run(args, check=True, capture_output=True)
    return binary


def test_cached_chains_and_lines_equal_pyelftools(inlined_built, many_units, tmp_path) -> None:
    for path in (inlined_built, many_units):
        vaddrs = _code_addresses(path)
        plain = DwarfIndex(str(path))
        want = [plain.inlines(v) for v in vaddrs]
        lines = [plain.line(v) for v in vaddrs]
        assert sum(len(chain) >= 2 for chain in want) > 10  # nested inline chains are there
        first = DwarfIndex(str(path), DwarfCache(str(tmp_path)))
        assert [first.inlines(v) for v in vaddrs] == want
        first.close()
        again = DwarfIndex(str(path), DwarfCache(str(tmp_path)))
        assert [again.inlines(v) for v in vaddrs] == want
        assert again.units_built == 0 and again.units_loaded == first.units_built
        assert [again.line(v) for v in vaddrs] == lines  # lines: the file is opened for them
    assert len(_entries(tmp_path)) == 2


def test_libc_debug_file_cached_equals_pyelftools(tmp_path) -> None:
    found = ElfCache().load(LIBC)
    if not isinstance(found, ElfIndex) or not found.source.startswith("debug:"):
        pytest.skip("needs libc with its separate debug file")
    path = found.source.removeprefix("debug:")
    starts, sizes, _names = found.arrays()
    rng = random.Random(11)
    functions = rng.sample([(s, z) for s, z in zip(starts, sizes, strict=True) if z > 0], 60)
    vaddrs = [s + rng.randrange(z) for s, z in functions for _ in range(3)]
    want = [DwarfIndex(path).inlines(v) for v in vaddrs]
    first = DwarfIndex(path, DwarfCache(str(tmp_path)))
    assert [first.inlines(v) for v in vaddrs] == want
    first.close()
    again = DwarfIndex(path, DwarfCache(str(tmp_path)))
    assert [again.inlines(v) for v in vaddrs] == want and any(want)
    assert again.units_built == 0 and again._dwarf is None


def test_a_second_run_answers_without_opening_the_file(
    inlined_built, tmp_path, monkeypatch
) -> None:
    vaddrs = _code_addresses(inlined_built)
    first = DwarfIndex(str(inlined_built), DwarfCache(str(tmp_path)))
    want = [first.inlines(v) for v in vaddrs]
    assert first.units_built == 1 and len(_entries(tmp_path)) == 1  # written at once

    def refuse(*_args: object) -> None:
        raise AssertionError("pyelftools opened the file")

    monkeypatch.setattr(dwarf_module, "ELFFile", refuse)
    again = DwarfIndex(str(inlined_built), DwarfCache(str(tmp_path)))
    assert again.has_dwarf
    assert [again.inlines(v) for v in vaddrs] == want
    assert again.units_built == 0 and again._dwarf is None and again.error is None
    assert again.inlines(0) == []  # outside every unit: still no opening


def test_a_damaged_entry_is_removed_and_rebuilt(inlined_built, tmp_path) -> None:
    vaddrs = _code_addresses(inlined_built)
    want = [DwarfIndex(str(inlined_built), DwarfCache(str(tmp_path))).inlines(v) for v in vaddrs]
    (entry,) = _entries(tmp_path)
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])  # truncated: marshal refuses it
    again = DwarfIndex(str(inlined_built), DwarfCache(str(tmp_path)))
    assert [again.inlines(v) for v in vaddrs] == want and again.units_built == 1
    assert entry.read_bytes() == data  # removed, then written again by the rebuild


def test_a_damaged_unit_is_not_trusted(inlined_built, tmp_path) -> None:
    import marshal

    vaddrs = _code_addresses(inlined_built)
    want = [DwarfIndex(str(inlined_built), DwarfCache(str(tmp_path))).inlines(v) for v in vaddrs]
    (entry,) = _entries(tmp_path)
    value = marshal.loads(entry.read_bytes())
    for offset, unit in value["units"].items():  # a frame's line number made a string
        frames = [(f[0], f[1], f[2], "7") for f in unit[4]]
        value["units"][offset] = (*unit[:4], frames)
    entry.write_bytes(marshal.dumps(value))
    again = DwarfIndex(str(inlined_built), DwarfCache(str(tmp_path)))
    assert [again.inlines(v) for v in vaddrs] == want
    assert again.units_built == 1 and again.units_loaded == 0
    assert marshal.loads(entry.read_bytes())["units"] != value["units"]  # rewritten, sound


def test_another_size_or_build_id_is_not_used(inlined_built, tmp_path) -> None:
    vaddrs = [s.start for s in nm_functions(inlined_built) if s.name == "fix_outer"]
    DwarfIndex(str(inlined_built), DwarfCache(str(tmp_path))).inlines(vaddrs[0])
    (entry,) = _entries(tmp_path)
    grown = tmp_path / "grown"
    grown.write_bytes(inlined_built.read_bytes() + b"\0")  # same build-id, another size
    other = DwarfIndex(str(grown), DwarfCache(str(tmp_path)))
    other.inlines(vaddrs[0])
    assert other.units_built == 1 and len(_entries(tmp_path)) == 2
    # An entry renamed to another file's key names its own build-id inside: refused.
    stranger = tmp_path / "stranger"
    subprocess.run(
        ["gcc", "-O2", "-g", "-o", str(stranger), str(Path(__file__).parent / "fixtures/prog.c")],
        check=True,
        capture_output=True,
    )
    cache = DwarfCache(str(tmp_path))
    probe = cache.entry(str(stranger))
    assert probe is not None and probe.cu is None
    target = tmp_path / f"{probe.build_id}-{probe.size}.dwarf"
    os.replace(entry, target)
    third = DwarfIndex(str(stranger), DwarfCache(str(tmp_path)))
    assert third.has_dwarf and third._dwarf is not None  # opened: the entry was not taken
    assert not target.exists()


def test_writes_at_once_while_small_then_every_few_seconds(many_units, tmp_path) -> None:
    now = [0.0]
    cache = DwarfCache(str(tmp_path), clock=lambda: now[0])
    dwarf = DwarfIndex(str(many_units), cache)
    outers = [s.start for s in nm_functions(many_units) if s.name.startswith("outer")]
    assert len(outers) == UNITS
    for at, vaddr in enumerate(outers[:EAGER_UNITS], 1):
        dwarf.inlines(vaddr)
        assert cache.writes == at  # each unit saved as it came
    for vaddr in outers[EAGER_UNITS:]:
        dwarf.inlines(vaddr)
    assert cache.writes == EAGER_UNITS  # not rewritten for each unit any more
    now[0] += SAVE_INTERVAL_S - 0.1
    dwarf.inlines(outers[0])
    assert cache.writes == EAGER_UNITS
    now[0] += 0.1
    dwarf.inlines(outers[0])  # a known unit: the unsaved ones are written now
    dwarf.inlines(outers[1])
    assert cache.writes == EAGER_UNITS + 1
    again = DwarfIndex(str(many_units), DwarfCache(str(tmp_path)))
    for vaddr in outers:
        again.inlines(vaddr)
    assert again.units_built == 0 and again.units_loaded == UNITS


def test_unsaved_units_are_saved_when_closed(many_units, tmp_path) -> None:
    cache = DwarfCache(str(tmp_path), clock=lambda: 0.0)
    dwarf = DwarfIndex(str(many_units), cache)
    outers = [s.start for s in nm_functions(many_units) if s.name.startswith("outer")]
    for vaddr in outers:
        dwarf.inlines(vaddr)
    dwarf.close()
    assert cache.writes == EAGER_UNITS + 1
    again = DwarfIndex(str(many_units), DwarfCache(str(tmp_path)))
    assert all(again.inlines(v) is not None for v in outers) and again.units_built == 0


def test_symbolizer_second_run_builds_no_unit(inlined_built, run, tmp_path) -> None:
    outer = next(s for s in nm_functions(inlined_built) if s.name == "fix_outer")
    prog = run(inlined_built)
    base = prog.addrs["fix_outer"] - outer.start
    stack = [base + v for v in range(outer.start, outer.start + outer.size)]
    folder = str(tmp_path / "cache")
    runs = []
    for _ in range(2):
        elf_cache = ElfCache(disk_cache=DiskCache(folder))
        sym = Symbolizer(elf_cache=elf_cache)
        frames = sym.user_frames(prog.pid, stack)
        index = elf_cache.load(str(inlined_built))
        assert isinstance(index, ElfIndex)
        dwarf = elf_cache.dwarf_for(index)
        assert dwarf is not None
        runs.append((frames, dwarf.units_built, dwarf.units_loaded))
    assert runs[0][0] == runs[1][0] and any(f.inlined for f in runs[0][0])
    assert runs[0][1:] == (1, 0) and runs[1][1:] == (0, 1)


def test_cache_turned_off(inlined_built, run, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("BPFTOP_SYMBOL_CACHE_DIR", "")
    sym = Symbolizer()
    assert sym.elf_cache.dwarf_cache is None and ElfCache().dwarf_cache is None
    outer = next(s for s in nm_functions(inlined_built) if s.name == "fix_outer")
    prog = run(inlined_built)
    frames = sym.user_frames(prog.pid, [prog.addrs["fix_outer"] + 0x10])
    assert len(frames) >= 2 and frames[-1].function == "fix_outer" and outer.size > 0x10
    assert DwarfCache(None).entry(str(inlined_built)) is None
    assert not glob.glob(str(tmp_path / "**" / "*.dwarf"), recursive=True)
