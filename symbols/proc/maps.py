"""Parsing /proc/PID/maps and finding the mapping that holds an address.

Owns :class:`MapEntry` (one line of the maps file), :class:`ProcessMaps`
(a sorted, bisectable set of them) and the first step from an address to a
symbol: ``file_offset = addr - start + offset`` (:mod:`bpftop.symbols.elf.index`
takes the file offset on to an ELF virtual address).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bpftop.symbols.frame import Address, FileOffset

DELETED_SUFFIX = " (deleted)"


@dataclass(frozen=True, slots=True)
class MapEntry:
    """One mapping: ``[start, end)`` with its permissions and backing file.

    ``path`` is clean (no `` (deleted)`` suffix; ``deleted`` says so instead);
    it is "" for anonymous memory and ``[heap]``/``[stack]``/``[vdso]``... for
    the kernel's special regions.
    """

    start: int
    end: int
    perms: str
    offset: int
    dev: str
    inode: int
    path: str
    deleted: bool = False

    @property
    def executable(self) -> bool:
        return "x" in self.perms

    @property
    def is_file(self) -> bool:
        """True when the mapping is backed by a file (a path, not ``[xxx]``)."""
        return self.path.startswith("/")

    @property
    def range_name(self) -> str:
        """The ``start-end`` name of this mapping under /proc/PID/map_files."""
        return f"{self.start:x}-{self.end:x}"

    def contains(self, addr: int) -> bool:
        return self.start <= addr < self.end

    def file_offset(self, addr: Address) -> FileOffset:
        """Where ``addr`` lies in the mapped file: ``addr - start + offset``."""
        return FileOffset(addr - self.start + self.offset)


def parse_line(line: str) -> MapEntry | None:
    """Parse one maps line; None when it is malformed."""
    parts = line.rstrip("\n").split(None, 5)
    if len(parts) < 5:
        return None
    span, perms, offset_hex, dev, inode_text = parts[:5]
    path = parts[5] if len(parts) == 6 else ""
    start_hex, sep, end_hex = span.partition("-")
    if not sep or len(perms) != 4 or ":" not in dev:
        return None
    try:
        start, end = int(start_hex, 16), int(end_hex, 16)
        offset, inode = int(offset_hex, 16), int(inode_text)
    except ValueError:
        return None
    if end <= start or offset < 0 or inode < 0:
        return None
    deleted = path.endswith(DELETED_SUFFIX) and path.startswith("/")
    if deleted:
        path = path[: -len(DELETED_SUFFIX)]
    return MapEntry(start, end, perms, offset, dev, inode, path, deleted)


def parse_maps(text: str) -> list[MapEntry]:
    """Every well-formed mapping in ``text``, in file order; junk is skipped."""
    entries = (parse_line(line) for line in text.splitlines())
    return [entry for entry in entries if entry is not None]


class ProcessMaps:
    """The mappings of one process, looked up by address with ``bisect``."""

    __slots__ = ("_entries", "_starts")

    def __init__(self, entries: Iterable[MapEntry]) -> None:
        self._entries: tuple[MapEntry, ...] = tuple(sorted(entries, key=lambda e: e.start))
        self._starts: list[int] = [entry.start for entry in self._entries]

    @classmethod
    def from_text(cls, text: str) -> ProcessMaps:
        return cls(parse_maps(text))

    @property
    def entries(self) -> Sequence[MapEntry]:
        return self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def find(self, addr: int) -> MapEntry | None:
        """The mapping containing ``addr``, or None."""
        index = bisect.bisect_right(self._starts, addr) - 1
        if index < 0:
            return None
        entry = self._entries[index]
        return entry if entry.contains(addr) else None


@dataclass(frozen=True, slots=True)
class FileId:
    """The identity of a file's contents, as far as stat can tell."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileId:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    @classmethod
    def of_path(cls, path: str) -> FileId | None:
        """The identity of ``path`` (following symlinks), or None if unstat-able."""
        try:
            return cls.of(os.stat(path))
        except OSError:
            return None
