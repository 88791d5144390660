"""DWARF: source lines and inline chains, lazily, against addr2line."""

from __future__ import annotations

import subprocess
import tracemalloc
from pathlib import Path

from bpftop.symbols.dwarf.index import DwarfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.symbolizer import Symbolizer
from tests.symbols.conftest import nm_functions


def _addr2line(path: Path, vaddrs: list[int]) -> dict[int, list[tuple[str, str | None, int]]]:
    """Per address: (function, file, line) innermost first, as addr2line -i says."""
    args = ["addr2line", "-a", "-f", "-i", "-e", str(path), *map(hex, vaddrs)]
    lines = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    out: dict[int, list[tuple[str, str | None, int]]] = {}
    at = 0
    while at < len(lines):
        chain = out.setdefault(int(lines[at], 16), [])
        at += 1
        while at + 1 < len(lines) and not lines[at].startswith("0x"):
            where = lines[at + 1].split(" (discriminator")[0]
            file, _, line = where.rpartition(":")
            number = int(line) if line.isdigit() else 0
            chain.append((lines[at], None if file == "??" else file, number))
            at += 2
    return out


def _outer(path: Path):
    return next(s for s in nm_functions(path) if s.name == "fix_outer")


def test_lines_and_inline_chains_match_addr2line(inlined_built, run) -> None:
    outer = _outer(inlined_built)
    vaddrs = list(range(outer.start, outer.start + outer.size))
    expected = _addr2line(inlined_built, vaddrs)
    prog = run(inlined_built)
    sym = Symbolizer()
    base = prog.addrs["fix_outer"] - outer.start
    deepest = 0
    for vaddr in vaddrs:
        frames = sym.user_frames(prog.pid, [base + vaddr])
        lines = sym.source_lines(prog.pid, [base + vaddr])
        chain = expected[vaddr]
        assert [f.function for f in frames] == [c[0] for c in chain], hex(vaddr)
        assert [f.inlined for f in frames] == [True] * (len(chain) - 1) + [False]
        want = [None if c[2] == 0 or c[1] is None else (c[1], c[2]) for c in chain]
        assert list(lines) == want, hex(vaddr)
        deepest = max(deepest, len(frames))
    assert deepest == 3  # inl_leaf inside inl_mid inside fix_outer


def test_with_source_lines_and_return_addresses(inlined_built, run) -> None:
    outer = _outer(inlined_built)
    prog = run(inlined_built)
    sym = Symbolizer()
    base = prog.addrs["fix_outer"] - outer.start
    stack = [base + outer.start + 0x10, base + outer.start + 0x11]  # 2nd: a return address
    frames = sym.with_source_lines(prog.pid, stack)
    assert len(frames) == len(sym.user_frames(prog.pid, stack)) >= 2
    assert frames[-1].function == "fix_outer" and frames[-1].line is not None
    assert frames[-1].file is not None and frames[-1].file.endswith("inlined.c")
    by_return = _addr2line(inlined_built, [outer.start + 0x10])[outer.start + 0x10]
    tail = [f.function for f in frames[-len(by_return) :]]
    assert tail == [c[0] for c in by_return]  # looked up at addr - 1


def test_a_stack_from_cached_chains_equals_one_resolved_afresh(inlined_built, run) -> None:
    outer = _outer(inlined_built)
    prog = run(inlined_built)
    base = prog.addrs["fix_outer"] - outer.start
    addrs = [base + outer.start + at for at in range(0, outer.size, 3)]
    stack = [addrs[5], *addrs[10:0:-1]]  # innermost first; callers are return addresses
    warm = Symbolizer()
    warm.user_frames(prog.pid, stack[:4])  # some callers cached, the rest not
    partly = warm.user_frames(prog.pid, stack)
    cached = warm.user_frames(prog.pid, stack[::-1])  # every caller cached now but one
    again = warm.user_frames(prog.pid, stack)  # every one cached
    assert any(f.inlined for f in again[1:])  # callers with inline chains
    assert partly == again == Symbolizer().user_frames(prog.pid, stack)
    assert cached == Symbolizer().user_frames(prog.pid, stack[::-1])


def test_inline_frames_can_be_turned_off(inlined_built, run) -> None:
    outer = _outer(inlined_built)
    prog = run(inlined_built)
    sym = Symbolizer(inline_frames=False)
    addr = prog.addrs["fix_outer"] + 0x10
    frames = sym.user_frames(prog.pid, [addr, addr])
    assert [f.function for f in frames] == ["fix_outer", "fix_outer"]
    lines = sym.source_lines(prog.pid, [addr])
    chain = _addr2line(inlined_built, [outer.start + 0x10])[outer.start + 0x10]
    assert lines == ((chain[0][1], chain[0][2]),)  # the innermost source line


def test_no_dwarf_means_no_lines(built, run) -> None:
    prog = run(built.pie)  # built without -g
    sym = Symbolizer()
    addr = prog.addrs["fix_alpha"] + 2
    assert len(sym.user_frames(prog.pid, [addr])) == 1
    assert sym.source_lines(prog.pid, [addr]) == (None,)
    assert sym.source_lines(prog.pid, [16]) == (None,)  # unmapped


def test_units_are_indexed_once_not_per_address(inlined_built) -> None:
    outer = _outer(inlined_built)
    dwarf = DwarfIndex(str(inlined_built))
    for vaddr in range(outer.start, outer.start + outer.size):
        dwarf.line(vaddr)
        dwarf.inlines(vaddr)
    assert dwarf.units_built == 1
    assert dwarf.line(0xFFFFFFFF) is None and dwarf.inlines(0) == []


def test_dwarf_from_the_debug_file_of_a_stripped_binary(debug_built, run) -> None:
    from bpftop.symbols.elf.debuginfo import DebugFinder

    prog = run(debug_built.linked)
    sym = Symbolizer(elf_cache=ElfCache(debug_finder=DebugFinder(str(debug_built.debug_root))))
    addr = prog.addrs["fix_beta"] + 4
    (line,) = sym.source_lines(prog.pid, [addr])
    full = _outer_like(debug_built.full, "fix_beta")
    chain = _addr2line(debug_built.full, [full + 4])[full + 4]
    assert line == (chain[-1][1], chain[-1][2])


def _outer_like(path: Path, name: str) -> int:
    return next(s.start for s in nm_functions(path) if s.name == name)


def test_broken_dwarf_file_answers_nothing(tmp_path) -> None:
    bogus = tmp_path / "x.debug"
    bogus.write_bytes(b"\x7fELF" + bytes(60))
    dwarf = DwarfIndex(str(bogus))
    assert not dwarf.has_dwarf and dwarf.line(0x1000) is None and dwarf.inlines(0x1000) == []
    assert DwarfIndex(str(tmp_path / "missing")).line(1) is None


def test_dwarf_of_another_build_is_refused(inlined_built, built) -> None:
    from bpftop.symbols.elf.index import ElfIndex

    cache = ElfCache()
    index = cache.load(str(inlined_built))
    assert isinstance(index, ElfIndex) and cache.dwarf_for(index) is not None
    other = ElfIndex.load(str(built.pie))
    assert isinstance(other, ElfIndex)
    other.elf_paths = (str(inlined_built),)  # a path that now holds another build
    assert cache.dwarf_for(other) is None


def test_a_big_unit_is_read_without_keeping_its_dies(tmp_path) -> None:
    """One compile unit of 2,000 functions: every function's range is found,
    and reading the unit keeps no DIE (pyelftools' own walk kept them all:
    8.3 MiB for this unit, against < 2 MiB here)."""
    source = tmp_path / "big.c"
    body = "".join(f"int f{n}(int x) {{ return x * {n} + {n % 7}; }}\n" for n in range(2000))
    source.write_text(body + "int main(void) { return f1(2); }\n")
    binary = tmp_path / "big"
    subprocess.run(["gcc", "-g", "-O0", "-o", binary, source], check=True, capture_output=True)
    dwarf = DwarfIndex(str(binary))
    f1999 = next(s for s in nm_functions(binary) if s.name == "f1999")
    dwarf.line(0)  # opens the file and indexes its units
    tracemalloc.start()
    try:
        assert dwarf.inlines(f1999.start) == []  # builds the unit
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert dwarf.units_built == 1 and dwarf.line(f1999.start) == (str(source), 2000)
    assert peak < 2 << 20, f"reading one unit peaked at {peak / 2**20:.1f} MiB"
