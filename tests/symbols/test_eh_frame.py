"""bpftop's own .eh_frame / .debug_frame decoder against the pyelftools build it
replaced (tests/symbols/pyelftools_unwind.py): equal tables on this machine's
real files and on damaged copies, and no pyelftools on the build path."""

from __future__ import annotations

import glob
import io
import os
import random
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from bpftop.symbols.unwind.table import RowKind, UnwindTable, build_unwind_table
from tests.symbols.pyelftools_unwind import reference_table

LIB = "/usr/lib/x86_64-linux-gnu"
REAL_FILES = [
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib64/ld-linux-x86-64.so.2",
    *sorted(p for p in glob.glob("/usr/bin/python3.*") if re.fullmatch(r".*/python3\.\d+", p)),
    *sorted(glob.glob(f"{LIB}/libstdc++.so.6.*"))[-1:],
    *(f"{LIB}/{name}" for name in ("libm.so.6", "libz.so.1", "libgcc_s.so.1", "libssl.so.3",
                                   "libsqlite3.so.0", "libyaml-0.so.2", "libffi.so.8")),
    *sorted(glob.glob("/usr/lib/debug/.build-id/*/*.debug"))[:1],  # .eh_frame is NOBITS there
]  # fmt: skip
WORKLOADS = ["chain_nofp", "deep_nofp", "probed_nofp", "chain", "demo", "thrower", "sdt", "scale"]


def _both(data: bytes) -> tuple[UnwindTable | None, UnwindTable | None]:
    return build_unwind_table(io.BytesIO(data), "id"), reference_table(io.BytesIO(data), "id")


def _assert_equal(path: str | Path) -> UnwindTable | None:
    ours, reference = _both(Path(path).read_bytes())
    assert ours == reference, path
    return ours


@pytest.mark.parametrize("path", [p for p in REAL_FILES if os.path.exists(p)])
def test_tables_equal_pyelftools_on_real_files(path: str) -> None:
    table = _assert_equal(path)
    if "debug" not in path:
        assert table is not None and len(table) > 10 and table.failed_fdes == 0


def test_tables_equal_pyelftools_on_the_test_workloads(workloads: Path) -> None:
    kinds: set[RowKind] = set()
    for name in WORKLOADS:
        table = _assert_equal(workloads / name)
        assert table is not None
        kinds |= set(table.kinds())
    assert {RowKind.RSP, RowKind.RBP, RowKind.STOP, RowKind.GAP} <= kinds


def test_debug_frame_equals_pyelftools(tmp_path: Path, workloads: Path) -> None:
    out, sources = tmp_path / "dbg", workloads.parents[1] / "tests" / "workloads"
    flags = ["-O2", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"]
    subprocess.run(
        ["gcc", *flags, f"-I{sources}", "-o", str(out), str(sources / "chain.c")], check=True
    )
    table = _assert_equal(out)
    assert table is not None and "debug_frame" in table.source


def _eh_frame(data: bytes) -> tuple[int, int, int]:
    """(file offset, size, index) of the .eh_frame section."""
    elf = ELFFile(io.BytesIO(data))
    for index, section in enumerate(elf.iter_sections()):
        if section.name == ".eh_frame":
            return section["sh_offset"], section["sh_size"], index
    raise AssertionError("no .eh_frame")


def _fde_start(data: bytes, at: int) -> int:
    """The first address of the FDE at file offset ``at`` ('zR', pc-relative sdata4)."""
    section = ELFFile(io.BytesIO(data)).get_section_by_name(".eh_frame")
    assert section is not None
    field_at = at + 8
    (relative,) = struct.unpack_from("<i", data, field_at)
    return int(section["sh_addr"]) + field_at - int(section["sh_offset"]) + int(relative)


def _fde_offsets(data: bytes) -> list[tuple[int, int]]:
    """(file offset, length) of each FDE in .eh_frame."""
    offset, size, _ = _eh_frame(data)
    found, at = [], 0
    while at < size:
        (length,) = struct.unpack_from("<I", data, offset + at)
        if length and struct.unpack_from("<I", data, offset + at + 4)[0]:
            found.append((offset + at, length))
        at += 4 + length
    return found


def test_a_garbage_fde_fails_alone_as_before(workloads: Path) -> None:
    data = bytearray((workloads / "chain_nofp").read_bytes())
    clean = build_unwind_table(io.BytesIO(bytes(data)))
    fdes = _fde_offsets(bytes(data))
    at, length = max(fdes, key=lambda f: f[1])  # the longest: most instructions
    assert data[at + 16] == 0  # 'zR': no augmentation data, instructions at +17
    data[at + 17 : at + 4 + length] = bytes([0x0B]) + bytes(length - 14)  # restore_state first
    ours, reference = _both(bytes(data))
    assert ours == reference
    assert ours is not None and clean is not None
    assert (ours.fdes, ours.failed_fdes) == (clean.fdes, 1)
    start = _fde_start(bytes(data), at)
    assert clean.lookup(start).kind is RowKind.RSP
    assert [r.pc for r in ours.rows() if r.kind is RowKind.UNSUPPORTED] == [start]
    assert len(ours) < len(clean)  # that FDE's rows gave way to one row
    before = [r for r in clean.rows() if r.pc < start]
    assert [r for r in ours.rows() if r.pc < start] == before  # the others are untouched


def test_a_truncated_or_unreadable_eh_frame_gives_no_table_as_before(workloads: Path) -> None:
    data = (workloads / "chain_nofp").read_bytes()
    offset, _, index = _eh_frame(data)
    elf = ELFFile(io.BytesIO(data))
    header_at = elf["e_shoff"] + index * elf["e_shentsize"]
    at, length = _fde_offsets(data)[1]
    cut = bytearray(data)  # sh_size ends in the middle of an FDE
    struct.pack_into("<Q", cut, header_at + 0x20, at - offset + length // 2)
    unknown = bytearray(data)  # an opcode neither knows
    unknown[at + 17] = 0x3F
    for damaged in (cut, unknown):
        ours, reference = _both(bytes(damaged))
        assert ours is None and reference is None


def test_randomly_damaged_eh_frames_give_what_pyelftools_gave(workloads: Path) -> None:
    """Bytes of .eh_frame overwritten at random (a fixed seed): equal tables,
    or no table from either; where pyelftools' build raised, ours may not."""
    rng = random.Random(14)
    compared = 0
    for name in ("chain_nofp", "thrower"):
        data = (workloads / name).read_bytes()
        offset, size, _ = _eh_frame(data)
        for _ in range(400):
            damaged = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                damaged[offset + rng.randrange(size)] = rng.choice(
                    (0, 1, 0x0B, 0x0E, 0x2E, 0x40, 0x80, 0xC6, 0xFF, rng.randrange(256))
                )
            ours = build_unwind_table(io.BytesIO(bytes(damaged)), "id")
            try:
                reference = reference_table(io.BytesIO(bytes(damaged)), "id")
            except Exception:  # the old build raised (an offset it could not pack)
                continue
            assert ours == reference, (name, bytes(damaged[offset : offset + size]).hex())
            compared += ours is not None
    assert compared > 200


def test_the_build_path_does_not_import_pyelftools(workloads: Path) -> None:
    code = (
        "import sys\n"
        "from bpftop.symbols.unwind.table import build_unwind_table\n"
        f"assert build_unwind_table(open({str(workloads / 'chain_nofp')!r}, 'rb')) is not None\n"
        "assert 'elftools' not in sys.modules, 'pyelftools imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
