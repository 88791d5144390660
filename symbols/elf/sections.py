"""Named sections of a little-endian ELF64 file, read with ``struct``.

Owns :func:`read_sections` and :class:`SectionData`: the machine of the file
and the bytes of the sections asked for by name, without pyelftools (the
unwind-table build reads ``.eh_frame`` / ``.debug_frame`` this way). A name
held by several sections names the last of them (as pyelftools' name map
does). SHF_COMPRESSED (zlib) sections are inflated; a SHT_NOBITS section has
no bytes (``nobits``: all zeros, ``size`` of them). A file cut short gives the
bytes that are there (``size`` keeps the header's size). Anything else wrong
with the file gives None; nothing here raises for a bad file.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import IO

EM_X86_64 = 62
SHT_NOBITS = 8
SHF_COMPRESSED = 0x800
ELFCOMPRESS_ZLIB = 1
SHN_XINDEX = 0xFFFF
MAX_SECTIONS = 1 << 16
# A section larger than this is not read (none of the ones asked for comes close).
MAX_SECTION_BYTES = 1 << 30
_SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_CHDR = struct.Struct("<IIQQ")  # Elf64_Chdr


@dataclass(frozen=True, slots=True)
class SectionData:
    """One section: its address, its bytes, and its size as the header says
    (more than ``len(data)`` in a truncated file or a SHT_NOBITS section)."""

    name: str
    address: int
    data: bytes
    size: int
    nobits: bool = False


def read_sections(
    stream: IO[bytes], names: tuple[str, ...]
) -> tuple[int, dict[str, SectionData]] | None:
    """(e_machine, the sections of ``names`` the file has) of an open ELF64
    little-endian file, or None if it is not one or its section table is broken."""
    try:
        stream.seek(0)
        ident = stream.read(64)
        if len(ident) < 64 or ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
            return None
        (machine,) = struct.unpack_from("<H", ident, 18)
        (shoff,) = struct.unpack_from("<Q", ident, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
        if shoff == 0:
            return machine, {}
        headers = _section_headers(stream, shoff, shentsize, shnum, shstrndx)
        if headers is None:
            return None
        table, strndx = headers
        if not 0 <= strndx < len(table):
            return None
        strtab = _read(stream, table[strndx])
        wanted: dict[str, tuple[int, ...]] = {}
        for header in table:
            name = _name(strtab, header[0])
            if name in names:
                wanted[name] = header
        return machine, {name: _section(stream, name, h) for name, h in wanted.items()}
    except (OSError, ValueError, OverflowError, struct.error, zlib.error):
        return None


def _section_headers(
    stream: IO[bytes], shoff: int, shentsize: int, shnum: int, shstrndx: int
) -> tuple[list[tuple[int, ...]], int] | None:
    if shentsize < _SHDR.size:
        return None
    stream.seek(shoff)
    first = stream.read(_SHDR.size)
    if len(first) < _SHDR.size:
        return None
    zeroth = _SHDR.unpack(first)
    count = shnum or zeroth[5]  # e_shnum 0: the count is section 0's sh_size
    strndx = zeroth[6] if shstrndx == SHN_XINDEX else shstrndx
    if count > MAX_SECTIONS:
        return None
    stream.seek(shoff)
    raw = stream.read(shentsize * count)
    if len(raw) < shentsize * count:
        return None
    return [_SHDR.unpack_from(raw, i * shentsize) for i in range(count)], strndx


def _name(strtab: bytes, at: int) -> str | None:
    end = strtab.find(b"\0", at)
    if at >= len(strtab) or end < 0:
        return None
    return strtab[at:end].decode("latin-1")


def _read(stream: IO[bytes], header: tuple[int, ...]) -> bytes:
    offset, size = header[4], header[5]
    if size > MAX_SECTION_BYTES:
        raise ValueError("section too large")
    stream.seek(offset)
    return stream.read(size)


def _section(stream: IO[bytes], name: str, header: tuple[int, ...]) -> SectionData:
    flags, address, size = header[2], header[3], header[5]
    if header[1] == SHT_NOBITS:
        return SectionData(name, address, b"", size, nobits=True)
    data = _read(stream, header)
    if flags & SHF_COMPRESSED:
        kind, _reserved, size, _align = _CHDR.unpack_from(data)
        if kind != ELFCOMPRESS_ZLIB or size > MAX_SECTION_BYTES:
            raise ValueError("unknown compression")
        data = zlib.decompressobj().decompress(data[_CHDR.size :], size)
        if len(data) != size:
            raise ValueError("bad compressed section")
    return SectionData(name, address, data, size)
