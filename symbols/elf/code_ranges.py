"""The executable file mappings of a process, with their load bias.

Owns :class:`CodeRange` and :func:`code_ranges`: what the in-kernel unwinder
needs to find a table for an address (``vaddr = address - bias``), the bias
by :func:`bpftop.symbols.elf.load_segments.mapping_bias` (the executable segment
the mapping holds, as LLD's layouts need). Files are opened
through /proc/PID/map_files/<range> (deleted files, other mount namespaces),
falling back to /proc/PID/root/<path>. Program headers are read with
``struct`` (no pyelftools: this runs every time the maps change). Nothing
here raises: a process that is gone gives an empty tuple.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import IO

from bpftop.symbols.elf.load_segments import LoadSegment, mapping_bias
from bpftop.symbols.proc.maps import MapEntry, parse_maps

PROC_ROOT = "/proc"
PT_LOAD = 1
MAX_PROGRAM_HEADERS = 256


@dataclass(frozen=True, slots=True)
class CodeRange:
    """One executable mapping of a file: ``[start, end)``, its bias, the path
    to open it by, and the file's identity (st_dev, st_ino, st_size, st_mtime_ns);
    or of code made at run time whose unwind ``rows`` (packed, named
    ``rows_source``) are known without a file (``-X perf`` trampolines)."""

    start: int
    end: int
    bias: int
    path: str
    open_path: str
    identity: tuple[int, int, int, int]
    rows: bytes = b""
    rows_source: str = ""

    @property
    def key(self) -> str:
        """A name for the file's contents (shared by every process mapping it)."""
        if self.rows:
            return f"[{self.rows_source}]"
        return "{:x}:{:x}:{:x}:{:x}".format(*self.identity)


def read_maps_text(pid: int, proc_root: str = PROC_ROOT) -> str | None:
    """/proc/PID/maps as text; None when the process is gone."""
    try:
        with open(f"{proc_root}/{pid}/maps") as stream:
            return stream.read()
    except OSError:
        return None


def code_ranges(
    pid: int, proc_root: str = PROC_ROOT, maps_text: str | None = None
) -> tuple[CodeRange, ...]:
    """The executable file mappings of ``pid`` (main program first, then in
    address order); ``maps_text``: its maps as just read (else read here)."""
    text = maps_text if maps_text is not None else read_maps_text(pid, proc_root)
    if text is None:
        return ()
    entries = parse_maps(text)
    found: list[CodeRange] = []
    for entry in entries:
        if entry.executable and entry.is_file:
            code = _code_range(pid, entry, proc_root)
            if code is not None:
                found.append(code)
    exe = _readlink(f"{proc_root}/{pid}/exe")
    found.sort(key=lambda c: (c.path != exe, c.start))
    return tuple(found)


def _code_range(pid: int, entry: MapEntry, proc_root: str) -> CodeRange | None:
    proc = f"{proc_root}/{pid}"
    for path in (f"{proc}/map_files/{entry.range_name}", f"{proc}/root{entry.path}"):
        try:
            with open(path, "rb") as stream:
                st = os.fstat(stream.fileno())
                segments = _load_segments(stream.read(64), stream)
        except OSError:
            continue
        bias = mapping_bias(segments, entry.start, entry.offset)
        if bias is None:
            return None
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        return CodeRange(entry.start, entry.end, bias, entry.path, path, identity)
    return None


def _load_segments(ident: bytes, stream: IO[bytes]) -> list[LoadSegment]:
    """The PT_LOAD headers of a little-endian ELF64 file."""
    if len(ident) < 64 or ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
        return []
    phoff = struct.unpack_from("<Q", ident, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", ident, 54)
    if phnum > MAX_PROGRAM_HEADERS or phentsize < 56:
        return []
    stream.seek(phoff)
    table = stream.read(phentsize * phnum)
    segments = []
    for at in range(0, len(table) - phentsize + 1, phentsize):
        kind, flags, offset, vaddr, _paddr, filesz, memsz = struct.unpack_from(
            "<IIQQQQQ", table, at
        )
        if kind == PT_LOAD:
            segments.append(LoadSegment(offset, filesz, vaddr, memsz, flags))
    return segments


def _readlink(path: str) -> str:
    try:
        return os.readlink(path).removesuffix(" (deleted)")
    except OSError:
        return ""
