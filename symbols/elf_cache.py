"""A cache of :class:`ElfIndex` values keyed by file identity.

Owns :class:`FileId` (st_dev, st_ino, st_size, st_mtime_ns) and
:class:`ElfCache`, so a library mapped by many processes is parsed once, and a
file replaced on disk (new inode or mtime) is parsed again. In-memory images
(the vDSO) are keyed by a digest of their bytes. Used from one thread.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from dataclasses import dataclass

from bpftop.symbols.elf import ElfError, ElfIndex

DEFAULT_MAX_FILES = 512


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


CacheKey = FileId | str
Result = ElfIndex | ElfError


class ElfCache:
    """Least-recently-used cache of parsed ELF files."""

    def __init__(self, max_files: int = DEFAULT_MAX_FILES) -> None:
        self._max_files = max_files
        self._entries: OrderedDict[CacheKey, Result] = OrderedDict()
        self.parses = 0  # how many files were actually parsed (for tests, stats)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey) -> Result | None:
        """The cached result for ``key``, if any."""
        result = self._entries.get(key)
        if result is not None:
            self._entries.move_to_end(key)
        return result

    def load(self, path: str, expected: FileId | None = None) -> Result | None:
        """The index of the file at ``path``, parsed at most once per identity.

        None when the file cannot be opened, or, with ``expected``, when its
        identity differs (another file at the same path: refused, not misread).
        """
        try:
            with open(path, "rb") as stream:
                file_id = FileId.of(os.fstat(stream.fileno()))
                if expected is not None and file_id != expected:
                    return None
                cached = self.get(file_id)
                if cached is not None:
                    return cached
                self.parses += 1
                return self._put(file_id, ElfIndex.from_stream(stream))
        except OSError:
            return None

    def load_bytes(self, data: bytes) -> Result:
        """The index of an in-memory ELF image, parsed once per content."""
        key = "sha256:" + hashlib.sha256(data).hexdigest()
        cached = self.get(key)
        if cached is not None:
            return cached
        self.parses += 1
        return self._put(key, ElfIndex.from_bytes(data))

    def _put(self, key: CacheKey, result: Result) -> Result:
        self._entries[key] = result
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_files:
            self._entries.popitem(last=False)
        return result
