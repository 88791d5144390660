"""Names for code the linker writes and a stripped file's symbols leave
unnamed: PLT stubs, as perf and objdump give them (``SYMBOL@plt``), and the
``.init``/``.fini`` sections (``_init``/``_fini``, the names crti.o gives them
where ``.symtab`` is kept; the loader runs ``_init`` when it maps a library,
so it is sampled in a program's first milliseconds).

Owns :func:`plt_stubs` and :func:`init_fini`. A call into another file goes through a 16-byte stub
in the PLT, which no symbol table names. Each stub jumps through a GOT slot
(``jmp *slot(%rip)``, after an ``endbr64`` in ``.plt.sec``, the second PLT
linkers write for IBT, which then holds the stubs); the ``.rela.plt``
relocation of that slot names it: its ``.dynsym`` symbol with ``@plt`` (its
version left off), or ``*ABS*+0xADDEND@plt`` for an ``IRELATIVE`` one (libc's
calls to its own ifuncs). Reading the slot, not counting relocations, keeps
the names right where the two orders differ (libc lists its ``IRELATIVE``
relocations last). The PLT's header (its first 16 bytes) stays unnamed.
Stubs in ``.plt.got`` (8 bytes each, 16 with IBT: calls to a function whose
address the file also takes, such as ``__cxa_finalize``) jump through a GOT
slot that a ``GLOB_DAT`` relocation in ``.rela.dyn`` names, and are named
the same way. Only little-endian ELF64 files have stubs here. Nothing here
raises for a bad file: it gives no stubs.
"""

from __future__ import annotations

import struct
from typing import Any

PLT_ENTRY_BYTES = 16
GOT_PLT_ENTRY_BYTES = (8, 16)  # .plt.got: jmp + 2-byte nop; with IBT, endbr64 + jmp + nop
R_X86_64_GLOB_DAT = 6
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


SECTION_FUNCTIONS = {".init": "_init", ".fini": "_fini"}


def init_fini(elf: Any) -> list[tuple[int, int, str]]:
    """``(address, size, name)`` of the ``.init`` and ``.fini`` code of a
    pyelftools ``ELFFile`` (each section is one function)."""
    found = []
    try:
        for section_name, name in SECTION_FUNCTIONS.items():
            section = elf.get_section_by_name(section_name)
            if section is not None and section["sh_type"] == "SHT_PROGBITS" and section["sh_size"]:
                found.append((int(section["sh_addr"]), int(section["sh_size"]), name))
    except Exception:  # pyelftools raises many kinds on a damaged file
        return []
    return found


def _stubs(elf: Any) -> list[tuple[int, int, str]]:
    slots = _slot_names(elf)
    if not slots:
        return []
    second = elf.get_section_by_name(".plt.sec")
    plt = second if second is not None else elf.get_section_by_name(".plt")
    stubs = _table(plt, PLT_ENTRY_BYTES, slots)
    got = elf.get_section_by_name(".plt.got")
    if got is not None:
        entry = int(got["sh_entsize"])
        stubs += _table(got, entry if entry in GOT_PLT_ENTRY_BYTES else 8, slots)
    return stubs


def _slot_names(elf: Any) -> dict[int, str]:
    """GOT slot address -> the name its relocation gives: every ``.rela.plt``
    one, and ``.rela.dyn``'s ``GLOB_DAT`` ones (the slots of ``.plt.got``)."""
    slots: dict[int, str] = {}
    for section_name, only_type in ((".rela.dyn", R_X86_64_GLOB_DAT), (".rela.plt", None)):
        relocations = elf.get_section_by_name(section_name)
        if relocations is None or relocations["sh_type"] != "SHT_RELA":
            continue
        names = _SymbolNames(elf, relocations["sh_link"])
        data = relocations.data()
        for at in range(0, len(data) - _RELA.size + 1, _RELA.size):
            offset, info, addend = _RELA.unpack_from(data, at)
            index, kind = info >> 32, info & 0xFFFFFFFF
            if only_type is not None and (kind != only_type or not index):
                continue
            slots[offset] = names.name(index) if index else f"*ABS*+0x{addend:x}"
    return slots


def _table(section: Any, entry_bytes: int, slots: dict[int, str]) -> list[tuple[int, int, str]]:
    """The named stubs of one PLT section of ``entry_bytes``-byte entries."""
    if section is None or section["sh_type"] == "SHT_NOBITS":
        return []
    code, base = section.data(), int(section["sh_addr"])
    stubs = []
    for at in range(0, len(code) - entry_bytes + 1, entry_bytes):
        jump = code.find(JMP_RIP, at, at + entry_bytes - 5)
        if jump < 0:
            continue
        (displacement,) = struct.unpack_from("<i", code, jump + 2)
        name = slots.get(base + jump + 6 + displacement)
        if name:
            stubs.append((base + at, entry_bytes, f"{name}@plt"))
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
