"""Unwind tables from .eh_frame / .debug_frame, checked row by row against
``readelf --debug-dump=frames-interp`` on gcc-built fixtures and on libc."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bpftop.symbols.elf.code_ranges import CodeRange, code_ranges
from bpftop.symbols.elf.disk_cache import read_build_id
from bpftop.symbols.proc.maps import parse_maps
from bpftop.symbols.unwind.cache import UnwindCache
from bpftop.symbols.unwind.table import RowKind, UnwindTable, build_unwind_table

WORKLOADS = Path(__file__).parents[1] / "workloads"
LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")
FDE_LINE = re.compile(r"FDE cie=\w+ pc=([0-9a-f]+)\.\.([0-9a-f]+)")
CFA_RULE = re.compile(r"(rsp|rbp)\+(\d+)$")


def _gcc(out: Path, *flags: str) -> Path:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to build the unwind fixtures (scripts/setup.sh installs it)")
    src = WORKLOADS / "chain.c"
    subprocess.run(["gcc", *flags, f"-I{WORKLOADS}", "-o", str(out), str(src)], check=True)
    return out


@pytest.fixture(scope="module")
def nofp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("unwind") / "chain_nofp"
    return _gcc(out, "-O2", "-fomit-frame-pointer")


def _table(path: Path) -> UnwindTable:
    with open(path, "rb") as stream:
        table = build_unwind_table(stream, read_build_id(stream))
    assert table is not None
    return table


def _readelf_rows(path: Path) -> list[tuple[int, int, str, str, str]]:
    """(FDE end, LOC, CFA, rbp column, ra column) of every row readelf prints."""
    text = subprocess.run(
        ["readelf", "--debug-dump=frames-interp", str(path)],
        check=False, capture_output=True, text=True,
    ).stdout  # fmt: skip
    rows: list[tuple[int, int, str, str, str]] = []
    end, columns = 0, list[str]()
    for line in text.splitlines():
        fde = FDE_LINE.search(line)
        if fde:
            end, columns = int(fde.group(2), 16), []
        elif " CIE" in line:
            end, columns = 0, []
        elif line.strip().startswith("LOC"):
            columns = line.split()
        elif columns and end and re.match(r"^[0-9a-f]{16} ", line):
            cells = dict(zip(columns, re.sub(r" \(\w+\)", "", line).split(), strict=False))
            rows.append((end, int(cells["LOC"], 16), cells["CFA"], cells.get("rbp", "u"),
                         cells["ra"]))  # fmt: skip
    return rows


def _check_against_readelf(path: Path) -> int:
    table = _table(path)
    compared = 0
    for end, loc, cfa, rbp, ra in _readelf_rows(path):
        row = table.lookup(loc)
        if row.kind in (RowKind.SIGNAL, RowKind.PLT, RowKind.UNSUPPORTED):
            assert cfa == "exp" or ra != "c-8" or not CFA_RULE.match(cfa), (hex(loc), row)
            continue
        if ra == "u":
            assert row.kind is RowKind.STOP, (hex(loc), row)
            continue
        match = CFA_RULE.match(cfa)
        assert match, (hex(loc), cfa, row)
        want = RowKind.RSP if match.group(1) == "rsp" else RowKind.RBP
        assert (row.kind, row.cfa_offset) == (want, int(match.group(2))), (hex(loc), cfa, row)
        assert row.ra_offset == int(ra[1:]), (hex(loc), ra, row)
        assert row.rbp_offset == (0 if rbp in ("u", "s") else int(rbp[1:])), (hex(loc), rbp, row)
        assert table.lookup(end).pc >= end or table.lookup(end).kind is not RowKind.GAP
        compared += 1
    return compared


def test_rows_match_readelf_on_an_omit_frame_pointer_build(nofp: Path) -> None:
    assert _check_against_readelf(nofp) > 10


def test_rows_match_readelf_on_libc() -> None:
    assert _check_against_readelf(LIBC) > 20_000


def test_fde_ends_are_gaps_and_rows_are_sorted(nofp: Path) -> None:
    table = _table(nofp)
    pcs = table.pcs()
    assert pcs == sorted(set(pcs))
    b_start = int(_nm(nofp)["b"], 16)
    assert table.lookup(b_start).kind is RowKind.RSP
    assert table.lookup(b_start).cfa_offset == 8  # on entry: only the return address
    assert table.lookup(0).kind is RowKind.GAP  # below every FDE


def test_start_has_an_undefined_return_address(nofp: Path) -> None:
    table = _table(nofp)
    assert table.lookup(int(_nm(nofp)["_start"], 16)).kind is RowKind.STOP


def test_libc_special_cases_plt_and_signal_trampoline() -> None:
    table = _table(LIBC)
    restore_rt = int(_nm(LIBC, dynamic=False).get("__restore_rt", "0"), 16) or _symbol_via_readelf()
    row = table.lookup(restore_rt - 1)  # the FDE starts one byte early, for pc-1 lookups
    assert row.kind is RowKind.SIGNAL
    plt_rows = [r for r in table.rows() if r.kind is RowKind.PLT]
    assert plt_rows and all((r.cfa_offset, r.arg) == (8, 11) for r in plt_rows)


def test_debug_frame_is_used_when_there_is_no_eh_frame(tmp_path: Path) -> None:
    out = _gcc(tmp_path / "dbg", "-O2", "-g", "-fno-asynchronous-unwind-tables",
               "-fno-unwind-tables", "-fomit-frame-pointer")  # fmt: skip
    table = _table(out)
    assert "debug_frame" in table.source
    assert table.lookup(int(_nm(out)["b"], 16) + 4).kind is RowKind.RSP


def test_a_file_without_cfi_gives_none(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF" + bytes(200))
    with open(junk, "rb") as stream:
        assert build_unwind_table(stream) is None


def test_disk_cache_round_trip_and_damage(tmp_path: Path, nofp: Path) -> None:
    cache = UnwindCache(str(tmp_path / "unwind"))
    built = cache.load(str(nofp))
    assert built is not None and cache.builds == 1 and cache.hits == 0
    again = UnwindCache(str(tmp_path / "unwind")).load(str(nofp))
    assert again == built
    (entry,) = (tmp_path / "unwind").iterdir()
    entry.write_bytes(entry.read_bytes()[:-7])  # damaged: rebuilt, not believed
    fresh = UnwindCache(str(tmp_path / "unwind"))
    assert fresh.load(str(nofp)) == built and fresh.builds == 1


def test_stripped_copy_is_cached_under_its_own_size(tmp_path: Path, nofp: Path) -> None:
    stripped = tmp_path / "stripped"
    shutil.copy(nofp, stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    cache = UnwindCache(str(tmp_path / "unwind"))
    cache.load(str(nofp))
    cache.load(str(stripped))
    assert cache.builds == 2 and len(list((tmp_path / "unwind").iterdir())) == 2


def _nm(path: Path, dynamic: bool = False) -> dict[str, str]:
    args = ["nm", *(["-D"] if dynamic else []), str(path)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return {p[2]: p[0] for p in (line.split() for line in out.splitlines()) if len(p) == 3}


def _symbol_via_readelf() -> int:
    """__restore_rt is local and libc is stripped: find its signal FDE instead."""
    text = subprocess.run(["readelf", "--debug-dump=frames", str(LIBC)], check=False,
                          capture_output=True, text=True).stdout  # fmt: skip
    blocks = text.split("\n\n")
    for block in blocks:
        if "DW_OP_breg7 (rsp): 160; DW_OP_deref" in block:
            match = FDE_LINE.search(block)
            assert match
            return int(match.group(1), 16) + 1
    raise AssertionError("no signal frame FDE in libc")


def test_code_ranges_bias_maps_addresses_to_elf_vaddrs(nofp: Path) -> None:
    """The load bias of every executable mapping: for these PIE/shared objects,
    vaddr 0 sits at the file's first mapping (offset 0)."""
    proc = subprocess.Popen([str(nofp), "5"])
    try:
        time.sleep(0.2)
        ranges = code_ranges(proc.pid)
        maps = parse_maps(Path(f"/proc/{proc.pid}/maps").read_text())
        keys = [_identity_key(code) for code in ranges]
    finally:
        proc.kill()
        proc.wait()
    assert ranges[0].path == str(nofp), "the main program comes first"
    assert any(r.path.endswith("libc.so.6") for r in ranges)
    for code, key in zip(ranges, keys, strict=True):
        first = min(m.start for m in maps if m.path == code.path and m.offset == 0)
        assert code.bias == first, (code, hex(first))
        assert code.key == key
    assert code_ranges(proc.pid) == ()  # gone: nothing, no error


def _identity_key(code: CodeRange) -> str:
    st = Path(code.open_path).stat()
    return f"{st.st_dev:x}:{st.st_ino:x}:{st.st_size:x}:{st.st_mtime_ns:x}"
