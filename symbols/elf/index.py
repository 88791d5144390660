"""One ELF file's symbol index: PT_LOAD segments and sorted function starts.

Owns :class:`ElfIndex` (built once per file with pyelftools; looked up with
``bisect``) and :class:`ElfError` (what a broken or unreadable file becomes).
Maps a file offset to an ELF virtual address through the PT_LOAD segment the
mapping holds (:func:`bpftop.symbols.elf.load_segments.segment_for_mapping`, the
rule the walker's load bias follows: one rule for PIE and non-PIE executables,
shared libraries and every linker's layout) and an ELF virtual address to
``(function, offset)``.
Symbols come from ``.symtab``, or ``.dynsym`` when ``.symtab`` is missing or
holds no functions, merged with MiniDebugInfo (``.gnu_debugdata``, an
xz-compressed ELF holding a ``.symtab``) when present. The build-id and the
``.gnu_debuglink`` are read too, so a separate debug file can supply names
(see :mod:`bpftop.symbols.elf.debuginfo`). Nothing here raises for a bad file.
"""

from __future__ import annotations

import bisect
import io
import lzma
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from elftools.elf.elffile import ELFFile

from bpftop.symbols.elf.load_segments import LoadSegment, segment_for_mapping
from bpftop.symbols.elf.plt import SECTION_FUNCTIONS, init_fini, plt_stubs
from bpftop.symbols.frame import ElfVaddr, FileOffset, Unresolved

STT_FUNC = 2
STT_GNU_IFUNC = 10
SHN_UNDEF = 0
STB_GLOBAL = 1
STB_WEAK = 2
# How many earlier symbols to try when the nearest one is sized and ends
# before the address (a small symbol nested inside a bigger one).
NESTED_LOOKBACK = 4
NT_GNU_BUILD_ID = 3
# A linker-made name's rank (a PLT stub's, ``_init`` from its section) against
# a symbol at the same address: below any real one.
PLT_RANK = (True, False, -1 << 20)
_LINKER_NAMES = frozenset(SECTION_FUNCTIONS.values())
# A MiniDebugInfo blob larger than this (decompressed) is not believed.
MAX_MINIDEBUGINFO_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class ElfError:
    """Why an ELF file gave no index."""

    reason: Unresolved
    message: str


@dataclass(frozen=True, slots=True)
class _Symbol:
    start: int
    size: int
    name: str
    rank: tuple[bool, bool, int]


@dataclass(frozen=True, slots=True)
class DebugLink:
    """The ``.gnu_debuglink`` of a stripped file: debug file name and its CRC32."""

    name: str
    crc: int


class ElfIndex:
    """Function starts of one ELF file, sorted, with sizes and names.

    ``source`` says where the names came from: ``SHT_SYMTAB``, ``SHT_DYNSYM``,
    ``SHT_DYNSYM+minidebuginfo``, ``debug:<path>`` or ``none``.
    """

    __slots__ = (
        "_names",
        "_sizes",
        "_starts",
        "build_id",
        "debug_searched",
        "debuglink",
        "elf_paths",
        "segments",
        "source",
    )

    def __init__(
        self,
        segments: tuple[LoadSegment, ...],
        symbols: list[_Symbol],
        source: str,
        *,
        build_id: str | None = None,
        debuglink: DebugLink | None = None,
    ):
        self.segments = segments
        self.source = source
        self.build_id = build_id
        self.debuglink = debuglink
        # Debug-file paths tried for this file (filled in by the cache), for hints.
        self.debug_searched: tuple[str, ...] = ()
        # Paths this file was opened by (set by the cache), to find its DWARF later.
        self.elf_paths: tuple[str, ...] = ()
        chosen = _dedupe(symbols)
        self._starts: list[int] = [s.start for s in chosen]
        self._sizes: list[int] = [s.size for s in chosen]
        self._names: list[str] = [s.name for s in chosen]

    @classmethod
    def from_arrays(
        cls,
        segments: tuple[LoadSegment, ...],
        arrays: tuple[list[int], list[int], list[str]],
        source: str,
        *,
        build_id: str | None = None,
        debuglink: DebugLink | None = None,
    ) -> ElfIndex:
        """An index from already sorted, deduplicated arrays (the disk cache)."""
        index = cls(segments, [], source, build_id=build_id, debuglink=debuglink)
        index._starts, index._sizes, index._names = arrays
        return index

    def arrays(self) -> tuple[list[int], list[int], list[str]]:
        """The sorted ``(starts, sizes, names)`` arrays (shared, do not mutate)."""
        return self._starts, self._sizes, self._names

    @property
    def has_full_symtab(self) -> bool:
        """True when names come from a full ``.symtab`` (own or a debug file's)."""
        return self.source == "SHT_SYMTAB" or self.source.startswith("debug:")

    def with_symbols_of(self, debug: ElfIndex, source: str) -> ElfIndex:
        """This file's segments and identity with ``debug``'s names, and this
        file's PLT stubs (a debug file has no PLT to read them from)."""
        stubs = [_Symbol(s, z, n, PLT_RANK) for n, s, z in self.functions() if _linker_made(n)]
        if not stubs:
            return ElfIndex.from_arrays(
                self.segments, debug.arrays(), source, build_id=self.build_id,
                debuglink=self.debuglink,
            )  # fmt: skip
        names = [_Symbol(s, z, n, (z > 0, True, 0)) for n, s, z in debug.functions()]
        return ElfIndex(
            self.segments, names + stubs, source, build_id=self.build_id, debuglink=self.debuglink
        )

    @property
    def has_symbols(self) -> bool:
        """True when a symbol table names functions (linker-made names alone,
        PLT stubs and ``_init``, do not count)."""
        return any(not _linker_made(name) for name in self._names)

    def __len__(self) -> int:
        return len(self._starts)

    def functions(self) -> Iterator[tuple[str, int, int]]:
        """Every indexed function as ``(name, start, size)``, by start."""
        return zip(self._names, self._starts, self._sizes, strict=True)

    def vaddr_for_offset(
        self, file_offset: FileOffset, map_offset: int | None = None, executable: bool = True
    ) -> ElfVaddr | None:
        """The ELF virtual address of a file offset in a mapping of file offset
        ``map_offset`` (``file_offset`` itself if not given), executable or
        not, via the PT_LOAD segment that mapping holds."""
        at = file_offset if map_offset is None else map_offset
        segment = segment_for_mapping(self.segments, at, executable)
        if segment is None or not segment.holds(file_offset):
            return None
        return ElfVaddr(segment.vaddr_of(file_offset))

    def lookup(self, vaddr: ElfVaddr) -> tuple[str, int] | None:
        """``(function, offset from its start)`` for an ELF vaddr, or None."""
        index = bisect.bisect_right(self._starts, vaddr) - 1
        if index < 0:
            return None
        if self._sizes[index] == 0 or vaddr < self._starts[index] + self._sizes[index]:
            return self._names[index], vaddr - self._starts[index]
        for back in range(index - 1, max(index - 1 - NESTED_LOOKBACK, -1), -1):
            start, size = self._starts[back], self._sizes[back]
            if size and vaddr < start + size:
                return self._names[back], vaddr - start
        return None

    def lookup_offset(
        self, file_offset: FileOffset, map_offset: int | None = None, executable: bool = True
    ) -> tuple[str, int] | None:
        """Like :meth:`lookup` for a file offset (in a mapping, as
        :meth:`vaddr_for_offset` takes it)."""
        vaddr = self.vaddr_for_offset(file_offset, map_offset, executable)
        return None if vaddr is None else self.lookup(vaddr)

    @classmethod
    def from_stream(cls, stream: IO[bytes]) -> ElfIndex | ElfError:
        """Index an open ELF file; a bad file gives an :class:`ElfError`."""
        try:
            elf = ELFFile(stream)
            segments = _load_segments(elf)
            build_id, debuglink = _build_id(elf), _debuglink(elf)
            symbols = _functions(elf, "SHT_SYMTAB")
            source = "SHT_SYMTAB"
            if not symbols:
                symbols = _functions(elf, "SHT_DYNSYM")
                source = "SHT_DYNSYM" if symbols else "none"
                mini = _minidebuginfo(elf)
                if mini:
                    symbols = symbols + mini
                    source = "minidebuginfo" if source == "none" else source + "+minidebuginfo"
            linker_made = plt_stubs(elf) + init_fini(elf)
            symbols += [_Symbol(*stub, PLT_RANK) for stub in linker_made]
            return cls(segments, symbols, source, build_id=build_id, debuglink=debuglink)
        except Exception as exc:  # pyelftools raises many kinds on bad input
            return ElfError(Unresolved.FILE_UNREADABLE, f"bad ELF: {type(exc).__name__}: {exc}")

    @classmethod
    def from_bytes(cls, data: bytes) -> ElfIndex | ElfError:
        return cls.from_stream(io.BytesIO(data))

    @classmethod
    def load(cls, path: str) -> ElfIndex | ElfError:
        try:
            with open(path, "rb") as stream:
                return cls.from_stream(stream)
        except OSError as exc:
            return ElfError(Unresolved.FILE_UNREADABLE, f"{path}: {exc.strerror}")


def _linker_made(name: str) -> bool:
    """True for a name the linker's code gets here without a symbol."""
    return name.endswith("@plt") or name in _LINKER_NAMES


def _load_segments(elf: Any) -> tuple[LoadSegment, ...]:
    segments = []
    for segment in elf.iter_segments():
        header = segment.header
        if header["p_type"] == "PT_LOAD":
            segments.append(
                LoadSegment(
                    int(header["p_offset"]),
                    int(header["p_filesz"]),
                    int(header["p_vaddr"]),
                    int(header["p_memsz"]),
                    int(header["p_flags"]),
                )
            )
    return tuple(segments)


def _symbol_format(elf: Any) -> struct.Struct:
    endian = "<" if elf.little_endian else ">"
    # Fields reordered below to (name, info, shndx, value, size).
    return struct.Struct(endian + ("IBBHQQ" if elf.elfclass == 64 else "IIIBBH"))


def _functions(elf: Any, section_type: str) -> list[_Symbol]:
    """Defined STT_FUNC / STT_GNU_IFUNC symbols of the first such section."""
    section = next((s for s in elf.iter_sections() if s["sh_type"] == section_type), None)
    if section is None:
        return []
    strtab = elf.get_section(section["sh_link"]).data()
    data = section.data()
    fmt = _symbol_format(elf)
    entsize = int(section["sh_entsize"]) or fmt.size
    bounds = [
        (int(s["sh_addr"]), int(s["sh_addr"]) + int(s["sh_size"])) for s in elf.iter_sections()
    ]
    symbols = []
    for pos in range(0, len(data) - fmt.size + 1, entsize):
        fields = fmt.unpack_from(data, pos)
        if elf.elfclass == 64:
            name_at, info, _other, shndx, value, size = fields
        else:
            name_at, value, size, info, _other, shndx = fields
        if (info & 0xF) not in (STT_FUNC, STT_GNU_IFUNC) or shndx == SHN_UNDEF or value == 0:
            continue
        # A versioned name (``key_setsecret@GLIBC_2.2.5``, from .symver) is
        # shown as its plain name, as perf and nm -D show it.
        name = _cstring(strtab, name_at).split("@", 1)[0]
        if name:
            is_global = (info >> 4) in (STB_GLOBAL, STB_WEAK)
            rank = (size > 0, is_global, -(len(name) - len(name.lstrip("_"))))
            if size == 0 and shndx < len(bounds) and bounds[shndx][0] <= value:
                # A size-0 symbol (``_init``) ends with its section, never
                # covering the next section's code (the PLT after .init).
                size = max(0, bounds[shndx][1] - value)
            symbols.append(_Symbol(value, size, name, rank))
    return symbols


def _build_id(elf: Any) -> str | None:
    """The GNU build-id as lowercase hex, or None."""
    for section in elf.iter_sections():
        if section["sh_type"] != "SHT_NOTE":
            continue
        for note in section.iter_notes():
            if note["n_type"] == "NT_GNU_BUILD_ID" and note["n_name"] == "GNU":
                desc = note["n_desc"]
                return desc if isinstance(desc, str) else bytes(desc).hex()
    return None


def _debuglink(elf: Any) -> DebugLink | None:
    """The ``.gnu_debuglink`` name and CRC32, or None."""
    section = elf.get_section_by_name(".gnu_debuglink")
    if section is None or section["sh_type"] == "SHT_NOBITS":
        return None
    data = section.data()
    end = data.find(b"\0")
    if end <= 0:
        return None
    crc_at = (end + 4) & ~3
    if crc_at + 4 > len(data):
        return None
    (crc,) = struct.unpack_from("<I" if elf.little_endian else ">I", data, crc_at)
    name = data[:end].decode("utf-8", "replace")
    if "/" in name or name in (".", ".."):
        return None  # a debuglink is a bare file name; anything else is hostile
    return DebugLink(name, crc)


def _minidebuginfo(elf: Any) -> list[_Symbol]:
    """Function symbols of the xz-compressed ELF in ``.gnu_debugdata``, if any."""
    section = elf.get_section_by_name(".gnu_debugdata")
    if section is None or section["sh_type"] == "SHT_NOBITS":
        return []
    decompressor = lzma.LZMADecompressor()
    data = decompressor.decompress(section.data(), MAX_MINIDEBUGINFO_BYTES)
    return _functions(ELFFile(io.BytesIO(data)), "SHT_SYMTAB")


def _cstring(table: bytes, at: int) -> str:
    end = table.find(b"\0", at)
    raw = table[at:] if end < 0 else table[at:end]
    return raw.decode("utf-8", "replace")


def _dedupe(symbols: list[_Symbol]) -> list[_Symbol]:
    """One symbol per start: prefer a sized, global, less-underscored one."""
    best: dict[int, _Symbol] = {}
    for symbol in symbols:
        current = best.get(symbol.start)
        if current is None or symbol.rank > current.rank:
            best[symbol.start] = symbol
    return [best[start] for start in sorted(best)]
