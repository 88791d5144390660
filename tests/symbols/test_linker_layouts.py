"""The load bias of executable mappings for the PT_LOAD layouts of GNU ld,
gold and LLD, PIE and not: first from each linker's program headers as
readelf printed them (mapped the way the kernel maps them), then from real
binaries each linker builds, checked against the running process's memory."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpftop.symbols.elf.code_ranges import code_ranges
from bpftop.symbols.elf.index import ElfIndex
from bpftop.symbols.elf.load_segments import PAGE_MASK, PF_X, LoadSegment, mapping_bias
from bpftop.symbols.frame import Address
from bpftop.symbols.proc.maps import ProcessMaps

R, RX, RW = 4, 5, 6
PIE_BASE = 0x55D0_0000_0000

# (linker, PIE?, PT_LOAD headers as (p_offset, p_vaddr, p_filesz, p_flags)),
# from `readelf -lW` of tests/workloads/split.c built with each linker.
LAYOUTS = [
    ("ld.bfd", True, [(0x0, 0x0, 0x6B0, R), (0x1000, 0x1000, 0x32D, RX),
                      (0x2000, 0x2000, 0x188, R), (0x2DD0, 0x3DD0, 0x258, RW)]),
    ("ld.bfd", False, [(0x0, 0x400000, 0x580, R), (0x1000, 0x401000, 0x31D, RX),
                       (0x2000, 0x402000, 0x180, R), (0x2DF8, 0x403DF8, 0x230, RW)]),
    ("gold", True, [(0x0, 0x0, 0xAC8, RX), (0xDC0, 0x1DC0, 0x270, RW)]),
    ("gold", False, [(0x0, 0x400000, 0xA08, RX), (0xDF8, 0x401DF8, 0x230, RW)]),
    ("lld", True, [(0x0, 0x0, 0x76C, R), (0x770, 0x1770, 0x340, RX),
                   (0xAB0, 0x2AB0, 0x1D8, RW), (0xC88, 0x3C88, 0x48, RW)]),
    ("lld", False, [(0x0, 0x200000, 0x6B4, R), (0x6C0, 0x2016C0, 0x330, RX),
                    (0x9F0, 0x2029F0, 0x1A0, RW), (0xB90, 0x203B90, 0x40, RW)]),
    # rustc 1.95's default (LLD), a release build of a hello world.
    ("rustc", True, [(0x0, 0x0, 0x12D4C, R), (0x12D50, 0x13D50, 0x3D4D0, RX),
                     (0x50220, 0x52220, 0x2748, RW), (0x52968, 0x55968, 0x9C0, RW)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("linker", "pie", "headers"),
    LAYOUTS,
    ids=[f"{x[0]}-{'pie' if x[1] else 'nopie'}" for x in LAYOUTS],
)
def test_bias_of_the_executable_mapping(
    linker: str, pie: bool, headers: list[tuple[int, int, int, int]]
) -> None:
    segments = [
        LoadSegment(offset, filesz, vaddr, filesz, flags)
        for offset, vaddr, filesz, flags in headers
    ]
    base = PIE_BASE if pie else 0
    (code,) = [s for s in segments if s.flags & PF_X]
    # The kernel maps a segment from its page-rounded vaddr and file offset.
    start, map_offset = base + (code.vaddr & PAGE_MASK), code.offset & PAGE_MASK
    assert mapping_bias(segments, start, map_offset) == base
    # The rule the walker applies: vaddr = address - bias lands on the same code.
    address = start + (code.offset - map_offset)
    assert address - base == code.vaddr


@pytest.mark.parametrize("layout", [x for x in LAYOUTS if x[0] in ("lld", "rustc")], ids=str)
def test_the_read_only_mapping_sharing_the_code_page_gets_its_own_bias(
    layout: tuple[str, bool, list[tuple[int, int, int, int]]],
) -> None:
    """The page where LLD ends the read-only segment and starts the code is
    mapped twice: read-only and executable. Each gets the bias of
    its own segment, so one rule serves the walker, the symbol index and the
    Python runtime."""
    _, pie, headers = layout
    segments = [
        LoadSegment(offset, filesz, vaddr, filesz, flags)
        for offset, vaddr, filesz, flags in headers
    ]
    base = PIE_BASE if pie else 0
    read_only, code = segments[0], segments[1]
    page = code.offset & PAGE_MASK  # the shared page: the end of one, the start of the other
    assert read_only.holds(page) and code.holds(page)
    start = base + read_only.vaddr_of(page)
    assert mapping_bias(segments, start, page, executable=False) == base
    code_start = base + code.vaddr_of(page)
    assert mapping_bias(segments, code_start, page, executable=True) == base


def test_a_mapping_no_segment_holds_has_no_bias() -> None:
    segments = [LoadSegment(0, 0x500, 0, 0x500, R), LoadSegment(0x1000, 0x200, 0x1000, 0x200, RX)]
    assert mapping_bias(segments, 0x7000_0000, 0x5000) is None


def test_without_an_executable_segment_the_holding_one_is_used() -> None:
    """A file mapped executable whose headers say nothing of PF_X (odd, but
    seen in hand-made ELF files) still gets the bias of the segment holding it."""
    segments = [LoadSegment(0, 0x2000, 0x10000, 0x2000, R)]
    assert mapping_bias(segments, 0x7000_0000, 0x1000) == 0x7000_0000 - 0x11000


LINKERS = ["bfd", "gold", "lld"]


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], Path]:
    """tests/workloads/split.c without frame pointers, built by each linker."""
    if shutil.which("gcc") is None or shutil.which("ld.lld") is None:
        pytest.skip("gcc and lld (Debian's lld package, installed by scripts/setup.sh) are needed")
    source = Path(__file__).parents[1] / "workloads" / "split.c"
    out = tmp_path_factory.mktemp("linkers")
    built = {}
    for linker in LINKERS:
        for pie in (True, False):
            path = out / f"split-{linker}-{'pie' if pie else 'nopie'}"
            pie_flags = ["-fPIE", "-pie"] if pie else ["-fno-pie", "-no-pie"]
            subprocess.run(
                ["gcc", "-O2", "-fomit-frame-pointer", "-DNO_KEEP_FRAME", f"-fuse-ld={linker}",
                 *pie_flags, "-o", str(path), str(source)],
                check=True, capture_output=True,
            )  # fmt: skip
            built[linker, pie] = path
    return built


def _symbol(path: Path, name: str) -> int:
    out = subprocess.run(["nm", str(path)], check=True, capture_output=True, text=True).stdout
    return next(int(p[0], 16) for p in map(str.split, out.splitlines()) if p[-1] == name)


def _file_bytes_at_vaddr(path: Path, vaddr: int, size: int) -> bytes:
    out = subprocess.run(["readelf", "-lW", str(path)], check=True, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        fields = line.split()
        if fields[:1] == ["LOAD"]:
            offset, seg_vaddr, filesz = (int(f, 16) for f in (fields[1], fields[2], fields[4]))
            if seg_vaddr <= vaddr < seg_vaddr + filesz:
                return path.read_bytes()[offset + vaddr - seg_vaddr :][:size]
    raise AssertionError(f"{hex(vaddr)} is in no PT_LOAD of {path}")


@pytest.fixture
def running(linked: dict[tuple[str, bool], Path]) -> Iterator[dict[tuple[str, bool], int]]:
    procs = {key: subprocess.Popen([str(path), "5"]) for key, path in linked.items()}
    time.sleep(0.2)
    yield {key: proc.pid for key, proc in procs.items()}
    for proc in procs.values():
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("pie", [True, False], ids=["pie", "nopie"])
@pytest.mark.parametrize("linker", LINKERS)
def test_bias_of_real_binaries_points_at_their_code(
    linker: str,
    pie: bool,
    linked: dict[tuple[str, bool], Path],
    running: dict[tuple[str, bool], int],
) -> None:
    """address = ELF vaddr + bias holds the function's bytes in the live process."""
    path, pid = linked[linker, pie], running[linker, pie]
    (code,) = [c for c in code_ranges(pid) if c.path == str(path)]
    vaddr = _symbol(path, "hot_a")
    address = vaddr + code.bias
    assert code.start <= address < code.end, (linker, pie, hex(code.bias))
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(address)
        live = mem.read(32)
    assert live == _file_bytes_at_vaddr(path, vaddr, 32)


@pytest.mark.parametrize("linker", LINKERS)
def test_the_symbol_index_follows_the_walkers_bias(
    linker: str,
    linked: dict[tuple[str, bool], Path],
    running: dict[tuple[str, bool], int],
) -> None:
    """hot_a's live address, taken to a file offset through its mapping and
    looked up in the file's index, is hot_a, in every linker's layout."""
    path, pid = linked[linker, True], running[linker, True]
    (code,) = [c for c in code_ranges(pid) if c.path == str(path)]
    address = _symbol(path, "hot_a") + code.bias + 2
    entry = next(e for e in ProcessMaps.from_text(Path(f"/proc/{pid}/maps").read_text()).entries
                 if e.contains(address))  # fmt: skip
    index = ElfIndex.load(str(path))
    assert isinstance(index, ElfIndex)
    file_offset = entry.file_offset(Address(address))
    assert index.lookup_offset(file_offset, entry.offset, entry.executable) == ("hot_a", 2)
