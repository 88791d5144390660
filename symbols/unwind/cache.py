"""Unwind tables kept on disk by build-id and size, built on a miss.

Owns :class:`UnwindCache` and :func:`unwind_cache_dir`. Building the table of
python3.11 takes about 0.2 CPU-s; a later run loads it from
``<symbol cache dir>/unwind/<build-id>-<size>.unw`` in milliseconds
(``bench/unwind_bench.py`` times both). The key
is the one :mod:`bpftop.symbols.elf.disk_cache` uses: the build-id names the code,
the size tells a stripped copy from the original. Entries are ``marshal``
data (a dict of ints, strings and one bytes blob: loading runs no code),
checked field by field; a broken one is removed and rebuilt. Files without a
build-id are built each time (and kept in memory by the caller). Nothing here
raises; a file without usable CFI gives None.
"""

from __future__ import annotations

import os
from typing import Any

from bpftop.symbols.elf.disk_cache import EntryStore, default_cache_dir, file_key, stream_key
from bpftop.symbols.unwind.table import ROW_SIZE, UnwindTable, build_unwind_table

FORMAT_VERSION = 1
SUBDIR = "unwind"
SUFFIX = ".unw"
DEFAULT_MAX_ENTRIES = 500


def unwind_cache_dir() -> str | None:
    """The folder for unwind tables: ``unwind/`` under the symbol cache (None: off)."""
    root = default_cache_dir()
    return None if root is None else os.path.join(root, SUBDIR)


class UnwindCache:
    """Unwind tables stored by build-id and size in one folder (None: memory only)."""

    def __init__(self, directory: str | None, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.directory = directory
        self._store = None if directory is None else EntryStore(directory, SUFFIX, max_entries)
        self.hits = 0
        self.builds = 0

    def load(self, path: str) -> UnwindTable | None:
        """The table of the ELF file at ``path``: from disk if stored, else built."""
        try:
            with open(path, "rb") as stream:
                build_id, size = stream_key(stream)
                found = self.get(build_id, size) if build_id else None
                if found is not None:
                    return found
                self.builds += 1
                table = build_unwind_table(stream, build_id)
        except OSError:
            return None
        if table is not None and build_id:
            self.put(table, size)
        return table

    def stored(self, path: str) -> UnwindTable | None:
        """The table of the ELF file at ``path`` if it is on disk (never builds:
        milliseconds, so a caller can take the cheap ones first)."""
        key = file_key(path)
        return self.get(*key) if key is not None else None

    def get(self, build_id: str, file_size: int) -> UnwindTable | None:
        if self._store is None:
            return None
        raw = self._store.read(build_id, file_size)
        table = None if raw is None else _decode(raw, build_id, file_size)
        if table is None:
            if raw is not None:
                self._store.remove(build_id, file_size)
            return None
        self.hits += 1
        return table

    def put(self, table: UnwindTable, file_size: int) -> None:
        """Store ``table`` atomically; errors are ignored."""
        if self._store is not None:
            self._store.write(table.build_id or "", file_size, _encode(table, file_size))


def _encode(table: UnwindTable, file_size: int) -> dict[str, Any]:
    return {
        "version": FORMAT_VERSION,
        "build_id": table.build_id,
        "file_size": file_size,
        "source": table.source,
        "fdes": table.fdes,
        "failed_fdes": table.failed_fdes,
        "packed": table.packed,
    }


def _decode(raw: Any, build_id: str, file_size: int) -> UnwindTable | None:
    if not isinstance(raw, dict) or raw.get("version") != FORMAT_VERSION:
        return None
    if raw.get("build_id") != build_id or raw.get("file_size") != file_size:
        return None
    packed, source = raw.get("packed"), raw.get("source")
    fdes, failed = raw.get("fdes"), raw.get("failed_fdes")
    if not isinstance(packed, bytes) or len(packed) % ROW_SIZE or not isinstance(source, str):
        return None
    if type(fdes) is not int or type(failed) is not int:
        return None
    table = UnwindTable(packed, source, build_id, fdes, failed)
    pcs = table.pcs()
    return table if pcs == sorted(set(pcs)) else None
