"""CPython's own _Py_DebugOffsets, parsed per minor version (symbols/python/layout.py),
and the thread state's TLS place decoded from PyThreadState_GetUnchecked
(symbols/python/tls.py), on the real interpreters: Debian's python3.13 and
python3.14 in the roots scripts/setup.sh builds, pyenv's shared 3.13.0.

The table is a static initializer, so its bytes are read from the ELF file
here; bpftop reads the same bytes from the live process.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from bpftop.symbols.python.layout import TABLE_BYTES, parse_debug_offsets, table_size
from bpftop.symbols.python.tls import TlsAccess, tls_access, tss_key_offset
from tests.pythons import PY313, PY314, PYENV313, Interpreter


def _read(path: Path, symbol: str, size: int) -> tuple[int, bytes]:
    """``symbol``'s address and its first ``size`` bytes as the file holds them."""
    with open(path, "rb") as stream:
        elf = ELFFile(stream)
        dynsym = elf.get_section_by_name(".dynsym")
        assert isinstance(dynsym, SymbolTableSection)
        found = dynsym.get_symbol_by_name(symbol)
        assert found, f"{symbol} not in {path}'s .dynsym"
        addr = found[0]["st_value"]
        for seg in elf.iter_segments():
            if seg["p_type"] == "PT_LOAD" and 0 <= addr - seg["p_vaddr"] < seg["p_filesz"]:
                stream.seek(addr - seg["p_vaddr"] + seg["p_offset"])
                return addr, stream.read(size)
    raise AssertionError(f"{symbol} not in a loaded segment of {path}")


def _table(python: Interpreter) -> bytes:
    return _read(python.host_binary(), "_PyRuntime", TABLE_BYTES)[1]


@pytest.mark.parametrize(
    ("python", "minor", "owner", "tag_bits", "code_size"),
    [(PY313, 13, 70, 0, 200), (PY314, 14, 74, 3, 208)],
    ids=["3.13", "3.14"],
)
def test_debian_tables_parse_to_the_known_layout(
    python: Interpreter, minor: int, owner: int, tag_bits: int, code_size: int
) -> None:
    layout = parse_debug_offsets(_table(python), minor)
    assert not isinstance(layout, str), layout
    # Facts from CPython's headers: f_executable first, previous next, instr_ptr
    # at +56, the owner byte; the thread state's current_frame at +72.
    assert (layout.frame_code, layout.frame_previous, layout.frame_instr) == (0, 8, 56)
    assert (layout.frame_entry, layout.entry_owner, layout.code_tag_bits) == (owner, 3, tag_bits)
    assert (layout.tstate_cframe, layout.current_frame) == (-1, 72)
    assert layout.code_size == code_size
    assert (layout.str_ascii_data, layout.str_compact_data) == (40, 56)  # no wstr since 3.12


def test_another_versions_table_or_a_damaged_one_is_refused() -> None:
    t313, t314 = _table(PY313), _table(PY314)
    assert isinstance(parse_debug_offsets(t314, 13), str)
    assert isinstance(parse_debug_offsets(t313, 14), str)
    assert "cookie" in str(parse_debug_offsets(b"ydebugpy" + t313[8:], 13))
    free = t313[:16] + struct.pack("<Q", 1) + t313[24:]
    assert parse_debug_offsets(free, 13) == "free-threaded builds are not supported"
    assert "cut short" in str(parse_debug_offsets(t313[: table_size(13) - 1], 13))
    assert "no _Py_DebugOffsets layout" in str(parse_debug_offsets(t313, 15))
    # A frame field past the walker's one read of a frame: refused, not guessed.
    fields = list(struct.unpack_from(f"<{table_size(13) // 8 - 3}Q", t313, 24))
    owner_at = 3 + 13 + 9 + 5  # runtime, interpreter, thread state groups, then owner's place
    fields[owner_at] = 300
    bad = t313[:24] + struct.pack(f"<{len(fields)}Q", *fields)
    assert "owner" in str(parse_debug_offsets(bad, 13))


def _accessor(path: Path) -> tuple[int, bytes]:
    return _read(path, "PyThreadState_GetUnchecked", 32)


def _tls_segment(path: Path) -> tuple[int, int]:
    with open(path, "rb") as stream:
        tls = next(s for s in ELFFile(stream).iter_segments() if s["p_type"] == "PT_TLS")
        return tls["p_memsz"], tls["p_align"]


@pytest.mark.parametrize("python", [PY313, PY314], ids=["3.13", "3.14"])
def test_debian_thread_state_is_in_the_executables_static_tls(python: Interpreter) -> None:
    path = python.host_binary()
    addr, code = _accessor(path)
    found = tls_access(code, addr, lambda _addr: None)
    assert found is not None and found.module == 0
    # x86-64 variant II: the executable's block ends at the thread pointer.
    memsz, align = _tls_segment(path)
    block = -(-memsz // align) * align
    assert -block <= found.offset <= -8, (found, memsz, align)


def test_shared_libpython_is_found_through_its_tls_module() -> None:
    lib = Path(PYENV313.binary).parent.parent / "lib" / "libpython3.13.so.1.0"
    if not lib.exists():
        pytest.fail(f"{lib} is needed (pyenv's 3.13.0, present on the build machines)")
    addr, code = _accessor(lib)

    def read(at: int) -> int:
        with open(lib, "rb") as stream:  # the GOT pair: module id (the loader's), offset
            elf = ELFFile(stream)
            for seg in elf.iter_segments():
                if seg["p_type"] == "PT_LOAD" and 0 <= at - seg["p_vaddr"] < seg["p_filesz"]:
                    stream.seek(at - seg["p_vaddr"] + seg["p_offset"])
                    value = int.from_bytes(stream.read(8), "little")
                    return value or 7  # the module id is 0 until relocated: say 7
        raise AssertionError(hex(at))

    found = tls_access(code, addr, read)
    with open(lib, "rb") as stream:
        symtab = ELFFile(stream).get_section_by_name(".symtab")
        assert isinstance(symtab, SymbolTableSection)
        symbol = symtab.get_symbol_by_name("_Py_tss_tstate")
    assert symbol
    assert found == TlsAccess(7, symbol[0]["st_value"])  # the offset .symtab gives the variable


def test_tls_sequences() -> None:
    endbr = bytes.fromhex("f30f1efa")
    local = endbr + bytes.fromhex("64488b0425e8ffffff") + b"\xc3"
    assert tls_access(local, 0x1000, lambda _a: None) == TlsAccess(0, -24)
    initial = bytes.fromhex("488b0510000000") + bytes.fromhex("64488b00c3")
    values = {0x1000 + 7 + 0x10: (1 << 64) - 40}
    assert tls_access(initial, 0x1000, values.get) == TlsAccess(0, -40)
    general = bytes.fromhex("4883ec08") + bytes.fromhex("66488d3d20000000")
    pair = {0x2000 + 12 + 0x20: 3, 0x2000 + 12 + 0x20 + 8: 24}
    assert tls_access(general, 0x2000, pair.get) == TlsAccess(3, 24)
    nothing: dict[int, int] = {}
    assert tls_access(general, 0x2000, nothing.get) is None  # the GOT unreadable
    assert tls_access(bytes.fromhex("31c0c3"), 0, lambda _a: 0) is None  # xor eax; ret


@pytest.mark.parametrize(
    ("python", "offset"), [(PY313, 0x870), (PY314, 0x920)], ids=["3.13", "3.14"]
)
def test_gilstate_key_is_found_in_pygilstate_getthisthreadstate(
    python: Interpreter, offset: int
) -> None:
    """The thread-local is NULL while a thread has let go of the GIL; the TSS
    key keeps the thread's state: its place in _PyRuntime, from the code."""
    path = python.host_binary()
    runtime, _ = _read(path, "_PyRuntime", 8)
    addr, code = _read(path, "PyGILState_GetThisThreadState", 32)
    assert tss_key_offset(code, addr, runtime, lambda _a: None) == offset


def test_gilstate_key_of_a_shared_libpython() -> None:
    lib = Path(PYENV313.binary).parent.parent / "lib" / "libpython3.13.so.1.0"
    runtime = 0x5294C0  # its _PyRuntime: the GOT entry read holds it once relocated
    addr, code = _read(lib, "PyGILState_GetThisThreadState", 32)
    assert tss_key_offset(code, addr, runtime, lambda _a: runtime) == 0x870
    assert tss_key_offset(code, addr, runtime, lambda _a: runtime + 8) is None  # not &_PyRuntime
