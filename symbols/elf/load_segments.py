"""PT_LOAD segments and the one rule that ties a mapping to one of them.

Owns :class:`LoadSegment` and :func:`segment_for_mapping`: a file mapping
(``map_offset``, page-aligned, and whether it is executable) holds the
segment whose page-rounded file range holds that offset and whose
permissions match the mapping's (PF_X for an executable one). Never the first
match: LLD (rustc's default linker, ``clang -fuse-ld=lld``) starts the
executable segment in the same file page as the end of the read-only one, so
both ranges hold that offset and the wrong one is 4 KiB off. When no holding
segment matches (hand-made files), the first holding one is used. An address
in the mapping is then at ELF vaddr ``file_offset - p_offset + p_vaddr``, and
the mapping's load bias is ``start - (p_vaddr + map_offset - p_offset)``:
the walker's tables (:mod:`bpftop.symbols.elf.code_ranges`), the symbol index
(:mod:`bpftop.symbols.elf.index`) and the Python runtime's symbols all use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PF_X = 1
PAGE_MASK = ~0xFFF


@dataclass(frozen=True, slots=True)
class LoadSegment:
    """One PT_LOAD program header."""

    offset: int
    filesz: int
    vaddr: int
    memsz: int
    flags: int

    def holds(self, file_offset: int) -> bool:
        """True when the segment's page-rounded file range holds ``file_offset``."""
        return self.offset & PAGE_MASK <= file_offset < self.offset + max(self.filesz, 1)

    def vaddr_of(self, file_offset: int) -> int:
        """The ELF virtual address ``file_offset`` has in this segment."""
        return file_offset - self.offset + self.vaddr


def segment_for_mapping(
    segments: Sequence[LoadSegment], map_offset: int, executable: bool
) -> LoadSegment | None:
    """The segment a mapping of file offset ``map_offset`` holds (None if none)."""
    holding = [s for s in segments if s.holds(map_offset)]
    matching = (s for s in holding if bool(s.flags & PF_X) == executable)
    return next(matching, holding[0] if holding else None)


def mapping_bias(
    segments: Sequence[LoadSegment], start: int, map_offset: int, executable: bool = True
) -> int | None:
    """The load bias of a mapping at ``start`` of file offset ``map_offset``."""
    chosen = segment_for_mapping(segments, map_offset, executable)
    return None if chosen is None else start - chosen.vaddr_of(map_offset)
