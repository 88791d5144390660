"""Property tests: thousands of mutated ELF files, maps lines, perf map and
kallsyms lines; nothing may escape from symbols/ (a reason, never a raise)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpftop.symbols.dwarf.index import DwarfIndex
from bpftop.symbols.elf.debuginfo import DebugFinder
from bpftop.symbols.elf.disk_cache import DiskCache, read_build_id
from bpftop.symbols.elf.index import ElfError, ElfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.frame import ElfVaddr, FileOffset
from bpftop.symbols.kallsyms import KernelSymbols
from bpftop.symbols.perfmap import PerfMap, parse_perf_map_line
from bpftop.symbols.proc.maps import ProcessMaps, parse_line
from bpftop.symbols.unwind.table import build_unwind_table

FUZZ = settings(
    max_examples=1500,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Mutations: (kind, position fraction, value). Header-aware kinds aim at the
# fields that steer the parse (section/program header tables and their sizes).
_E_FIELDS_64 = [(0x20, "Q"), (0x28, "Q"), (0x36, "H"), (0x38, "H"), (0x3A, "H"), (0x3C, "H"),
                (0x3E, "H")]  # fmt: skip
_ABSURD = [0, 1, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40, (1 << 64) - 1]
mutation = st.one_of(
    st.tuples(st.just("byte"), st.floats(0, 1), st.integers(0, 255)),
    st.tuples(st.just("field"), st.integers(0, len(_E_FIELDS_64) - 1), st.sampled_from(_ABSURD)),
    st.tuples(st.just("shdr"), st.floats(0, 1), st.sampled_from(_ABSURD)),
    st.tuples(st.just("truncate"), st.floats(0, 1), st.just(0)),
)


def _pack(fmt: str, value: int) -> bytes:
    return struct.pack("<" + fmt, value & ((1 << (8 * struct.calcsize(fmt))) - 1))


def _mutate(data: bytes, mutations: list[tuple[str, float, int]]) -> bytes:
    buf = bytearray(data)
    for kind, where, value in mutations:
        if not buf:
            break
        if kind == "byte":
            buf[int(where * (len(buf) - 1))] = value
        elif kind == "field" and len(buf) >= 0x40:
            at, fmt = _E_FIELDS_64[int(where)]
            buf[at : at + struct.calcsize(fmt)] = _pack(fmt, value)
        elif kind == "shdr" and len(buf) >= 0x40:
            shoff, shnum = (
                struct.unpack_from("<Q", buf, 0x28)[0],
                struct.unpack_from("<H", buf, 0x3C)[0],
            )
            if shnum and shoff < len(buf):
                # overwrite one 8-byte field (offset, size, entsize, ...) of one section header
                at = shoff + int(where * shnum) % shnum * 64 + 8 * (1 + int(where * 1000) % 7)
                if at + 8 <= len(buf):
                    buf[at : at + 8] = _pack("Q", value)
        elif kind == "truncate":
            del buf[int(where * len(buf)) :]
    return bytes(buf)


def _exercise(result: ElfIndex | ElfError) -> None:
    if isinstance(result, ElfIndex):
        for at in (0, 0x1000, 0x1139, 0x401000, (1 << 64) - 1):
            result.lookup(ElfVaddr(at))
            result.lookup_offset(FileOffset(at))
        list(result.functions())


@pytest.fixture(scope="module")
def seeds(built, debug_built) -> list[bytes]:
    return [Path(p).read_bytes() for p in (built.pie, built.lib, built.nopie,
            debug_built.linked, debug_built.dir / "linked.debug")]  # fmt: skip


@FUZZ
@given(which=st.integers(0, 4), mutations=st.lists(mutation, min_size=1, max_size=8))
def test_mutated_elf_never_raises(seeds, which: int, mutations) -> None:
    data = _mutate(seeds[which], mutations)
    _exercise(ElfIndex.from_bytes(data))
    read_build_id(io.BytesIO(data))
    table = build_unwind_table(io.BytesIO(data))
    if table is not None:
        table.lookup(0x1139)


@settings(FUZZ, max_examples=300)
@given(which=st.integers(0, 4), mutations=st.lists(mutation, min_size=1, max_size=6))
def test_mutated_files_through_the_caches_never_raise(seeds, tmp_path_factory, which, mutations):
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "libfuzz.so"
    path.write_bytes(_mutate(seeds[which], mutations))
    (folder / "linked.debug").write_bytes(_mutate(seeds[4], mutations))  # a hostile debug file
    cache = ElfCache(debug_finder=DebugFinder(str(folder)), disk_cache=DiskCache(str(folder)))
    for _ in range(2):  # the second load may come from the disk cache
        result = cache.load(str(path))
        if result is not None:
            _exercise(result)
    for hostile in (path, folder / "linked.debug"):
        dwarf = DwarfIndex(str(hostile))
        for at in (0x1139, 0x1150, 0x1200, 0x401139):
            dwarf.line(at)
            dwarf.inlines(at)
        cache = ElfCache(debug_finder=DebugFinder(str(folder)), disk_cache=DiskCache(str(folder)))


REAL_MAPS_LINES = [
    "55d0c2a00000-55d0c2a21000 r-xp 00001000 08:01 1234 /usr/bin/prog",
    "7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0 ",
    "7ffd4a9f3000-7ffd4a9f5000 r-xp 00000000 00:00 0                          [vdso]",
    "7f1e2d000000-7f1e2d100000 r-xp 00000000 fd:00 99 /tmp/lib x.so (deleted)",
]


@FUZZ
@given(
    base=st.sampled_from(REAL_MAPS_LINES),
    edits=st.lists(st.tuples(st.floats(0, 1), st.characters()), max_size=6),
    noise=st.text(max_size=120),
)
def test_maps_lines_never_raise(base: str, edits, noise: str) -> None:
    line = list(base)
    for where, char in edits:
        line[int(where * (len(line) - 1))] = char
    text = "".join(line)
    for candidate in (text, noise, text + noise, noise + "\n" + text):
        parse_line(candidate)
        maps = ProcessMaps.from_text(candidate)
        for entry in maps.entries:
            assert entry.start < entry.end
            maps.find(entry.start)
        maps.find(0x55D0C2A00010)


PERF_LINE = st.from_regex(r"(0x)?[0-9a-fA-F]{1,18} [0-9a-fA-F]{1,10} .{0,30}", fullmatch=True)


@FUZZ
@given(lines=st.lists(st.one_of(st.text(max_size=80), PERF_LINE), max_size=20))
def test_perf_map_and_kallsyms_lines_never_raise(tmp_path_factory, lines: list[str]) -> None:
    for line in lines:
        parse_perf_map_line(line)
    path = tmp_path_factory.mktemp("pm") / "perf-1.map"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n")
    perf_map = PerfMap(str(path))
    perf_map.refresh()
    for at in (0, 1, 0x1000, (1 << 64) - 1):
        perf_map.lookup(at)
    table = KernelSymbols(lines)
    table.lookup(0xFFFFFFFF81000000)
    kallsyms = tmp_path_factory.mktemp("ks") / "kallsyms"
    kallsyms.write_bytes(path.read_bytes())  # the same lines, through load's array parser
    KernelSymbols.load(str(kallsyms)).lookup(0xFFFFFFFF81000000)


KALLSYMS_LINE = st.from_regex(
    r"[0-9a-f]{16} [tTwWdD] [a-z_]{1,12}(\t\[[a-z]{1,6}\])?", fullmatch=True
)


@FUZZ
@given(lines=st.lists(KALLSYMS_LINE, min_size=1, max_size=30))
def test_kallsyms_read_as_arrays_answers_as_line_by_line(
    tmp_path_factory, lines: list[str]
) -> None:
    text = "".join(f"{line}\n" for line in lines)
    path = tmp_path_factory.mktemp("ks") / "kallsyms"
    path.write_text(text)
    fast, slow = KernelSymbols.load(str(path)), KernelSymbols.from_text(text)
    for line in lines:
        for addr in (int(line[:16], 16), int(line[:16], 16) + 5):
            a, b = fast.lookup(addr), slow.lookup(addr)
            assert (a.function, a.module, a.offset, a.reason) == (
                b.function, b.module, b.offset, b.reason,
            )  # fmt: skip


MANGLED_SEEDS = [
    "_ZN5fixns7computeERKSt6vectorIiSaIiEERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_ZN7fixrust6legacy4work17h0123456789abcdefE",
    "_RNvMsr_NtCs3ssYzQotkvD_3std4pathNtB5_7PathBuf3newCs15kBYyAo9fc_7mycrate",
    "_RINvNtC3std3mem8align_ofjEC3foo",
]


@FUZZ
@given(
    seed=st.sampled_from(MANGLED_SEEDS),
    cut=st.floats(0, 1),
    edits=st.lists(st.tuples(st.floats(0, 1), st.characters(max_codepoint=0x7F)), max_size=4),
    tail=st.text(max_size=20),
)
def test_demangling_garbage_never_raises(seed: str, cut: float, edits, tail: str) -> None:
    from bpftop.symbols.names.demangle import demangle, display_and_mangled

    name = list(seed[: max(2, int(cut * len(seed)))])
    for where, char in edits:
        name[int(where * (len(name) - 1))] = char
    text = "".join(name) + tail
    assert isinstance(demangle(text), str)
    shown, mangled = display_and_mangled(text)
    assert (mangled is None and shown == text) or (mangled == text and shown != text)
