"""Where CPython's eval loop is: ``_PyEval_EvalFrameDefault`` and its cold parts.

Owns :func:`eval_ranges`. A native frame whose address is in one of these
ranges is the eval loop running Python code (tui/collect/python_frames.py
merges the Python frames there). GCC splits the function: a hot part under
the symbol, and a cold part with its own ``.eh_frame`` FDE and no symbol,
entered by jumps from the hot part. Debian's 3.14 build puts almost the
whole loop there (84 KB of cold part beside a 1,184-byte hot one), so a
frame test by the symbol's range alone misses most eval frames. The cold
parts are found from the hot part's code: the FDEs that its direct jumps
(``jmp``/``jcc rel32``) land inside, past their start (a tail call lands on
a function's first byte), landed in at least twice (the scan reads every
byte as a possible opcode: one stray hit is not trusted). FDEs are found through ``.eh_frame_hdr``'s
sorted table. Anything unexpected gives the hot range alone.
"""

from __future__ import annotations

import bisect
import struct
from collections import Counter

from elftools.elf.elffile import ELFFile

HDR_TABLE_ENCODINGS = (0x03, 0x3B)  # fde_count: udata4; table: datarel sdata4
MIN_HITS = 2
Range = tuple[int, int]


def eval_ranges(elf: ELFFile, start: int, size: int) -> tuple[Range, ...]:
    """[start, end) vaddr ranges of the eval loop whose symbol is at ``start``
    (``size`` bytes): the hot part first."""
    hot = (start, start + size)
    code = _bytes_at(elf, start, size)
    table = _FdeTable.of(elf)
    if code is None or table is None:
        return (hot,)
    hits: Counter[Range] = Counter()
    for target in _jump_targets(code, start):
        if hot[0] <= target < hot[1]:
            continue
        fde = table.containing(target)
        if fde is not None and fde[0] < target:
            hits[fde] += 1
    cold = sorted(fde for fde, count in hits.items() if count >= MIN_HITS)
    return (hot, *cold)


def _jump_targets(code: bytes, addr: int) -> list[int]:
    targets = []
    for at in range(len(code) - 5):
        op = code[at]
        if op == 0xE9:
            rel, length = struct.unpack_from("<i", code, at + 1)[0], 5
        elif op == 0x0F and 0x80 <= code[at + 1] <= 0x8F and at + 6 <= len(code):
            rel, length = struct.unpack_from("<i", code, at + 2)[0], 6
        else:
            continue
        targets.append(addr + at + length + rel)
    return targets


def _bytes_at(elf: ELFFile, vaddr: int, size: int) -> bytes | None:
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and 0 <= vaddr - seg["p_vaddr"] <= seg["p_filesz"] - size:
            stream = elf.stream
            stream.seek(seg["p_offset"] + vaddr - seg["p_vaddr"])
            data: bytes = stream.read(size)
            return data if len(data) == size else None
    return None


class _FdeTable:
    """``.eh_frame_hdr``'s sorted (initial location, FDE address) table, and
    each FDE's own range from ``.eh_frame``."""

    def __init__(self, starts: list[int], fdes: list[int], eh_frame: bytes, eh_addr: int) -> None:
        self._starts, self._fdes = starts, fdes
        self._eh_frame, self._eh_addr = eh_frame, eh_addr

    @classmethod
    def of(cls, elf: ELFFile) -> _FdeTable | None:
        hdr, eh = elf.get_section_by_name(".eh_frame_hdr"), elf.get_section_by_name(".eh_frame")
        if hdr is None or eh is None:
            return None
        data, base = hdr.data(), hdr["sh_addr"]
        if len(data) < 12 or data[0] != 1 or (data[2], data[3]) != HDR_TABLE_ENCODINGS:
            return None
        count = struct.unpack_from("<I", data, 8)[0]
        if len(data) < 12 + 8 * count:
            return None
        pairs = struct.unpack_from(f"<{2 * count}i", data, 12)
        starts = [base + rel for rel in pairs[0::2]]
        fdes = [base + rel for rel in pairs[1::2]]
        return cls(starts, fdes, eh.data(), eh["sh_addr"])

    def containing(self, addr: int) -> Range | None:
        """The range of the FDE covering ``addr``, if its own header says so."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        at = self._fdes[i] - self._eh_addr
        if not 0 <= at <= len(self._eh_frame) - 16:
            return None
        length, _cie, begin, span = struct.unpack_from("<IIiI", self._eh_frame, at)
        pc_begin = self._fdes[i] + 8 + begin  # pc_begin: pcrel sdata4 (x86-64's usual)
        if length == 0xFFFFFFFF or pc_begin != self._starts[i]:
            return None
        return (pc_begin, pc_begin + span) if addr < pc_begin + span else None
