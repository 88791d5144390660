"""Names for PLT stubs, as perf and objdump give them: ``SYMBOL@plt``.

Owns :func:`plt_stubs`. A call into another file goes through a 16-byte stub
in the PLT, which no symbol table names. Each stub jumps through a GOT slot
(``jmp *slot(%rip)``, after an ``endbr64`` in ``.plt.sec``, the second PLT
linkers write for IBT, which then holds the stubs); the ``.rela.plt``
relocation of that slot names it: its ``.dynsym`` symbol with ``@plt`` (its
version left off), or ``*ABS*+0xADDEND@plt`` for an ``IRELATIVE`` one (libc's
calls to its own ifuncs). Reading the slot, not counting relocations, keeps
the names right where the two orders differ (libc lists its ``IRELATIVE``
relocations last). The PLT's header (its first 16 bytes) stays unnamed. Only
little-endian ELF64 files have stubs here. Nothing here raises for a bad
file: it gives no stubs.
"""

from __future__ import annotations

import struct
from typing import Any

PLT_ENTRY_BYTES = 16
JMP_RIP = b"\xff\x25"  # jmp *disp32(%rip): the stub's jump through its GOT slot
_RELA = struct.Struct("<QQq")  # r_offset, r_info, r_addend
_SYM = struct.Struct("<IBBHQQ")  # st_name, st_info, st_other, st_shndx, st_value, st_size


def plt_stubs(elf: Any) -> list[tuple[int, int, str]]:
    """``(address, size, name)`` of each PLT stub of a pyelftools ``ELFFile``."""
    if elf.elfclass != 64 or not elf.little_endian:
        return []
    try:
        return _stubs(elf)
    except Exception:  # pyelftools raises many kinds on a damaged file
        return []


def _stubs(elf: Any) -> list[tuple[int, int, str]]:
    relocations = elf.get_section_by_name(".rela.plt")
    second = elf.get_section_by_name(".plt.sec")
    plt = second if second is not None else elf.get_section_by_name(".plt")
    if relocations is None or plt is None or relocations["sh_type"] != "SHT_RELA":
        return []
    if plt["sh_type"] == "SHT_NOBITS" or relocations["sh_type"] == "SHT_NOBITS":
        return []
    names = _SymbolNames(elf, relocations["sh_link"])
    slots = {}
    data = relocations.data()
    for at in range(0, len(data) - _RELA.size + 1, _RELA.size):
        offset, info, addend = _RELA.unpack_from(data, at)
        index = info >> 32
        slots[offset] = names.name(index) if index else f"*ABS*+0x{addend:x}"
    code, base = plt.data(), int(plt["sh_addr"])
    stubs = []
    for at in range(0, len(code) - PLT_ENTRY_BYTES + 1, PLT_ENTRY_BYTES):
        jump = code.find(JMP_RIP, at, at + PLT_ENTRY_BYTES - 5)
        if jump < 0:
            continue
        (displacement,) = struct.unpack_from("<i", code, jump + 2)
        name = slots.get(base + jump + 6 + displacement)
        if name:
            stubs.append((base + at, PLT_ENTRY_BYTES, f"{name}@plt"))
    return stubs


class _SymbolNames:
    """Names of a symbol table's entries by index (versions left off)."""

    def __init__(self, elf: Any, table_index: int) -> None:
        table = elf.get_section(table_index)
        self.data: bytes = table.data()
        self.strings: bytes = elf.get_section(table["sh_link"]).data()
        self.entry = int(table["sh_entsize"]) or _SYM.size

    def name(self, index: int) -> str:
        at = index * self.entry
        if at + _SYM.size > len(self.data):
            return ""
        name_at = _SYM.unpack_from(self.data, at)[0]
        end = self.strings.find(b"\0", name_at)
        raw = self.strings[name_at:] if end < 0 else self.strings[name_at:end]
        return raw.decode("utf-8", "replace").split("@", 1)[0]
