"""A cache of :class:`ElfIndex` values keyed by file identity.

Owns :class:`FileId` (st_dev, st_ino, st_size, st_mtime_ns) and
:class:`ElfCache`, so a library mapped by many processes is parsed once, and a
file replaced on disk (new inode or mtime) is parsed again. In-memory images
(the vDSO) are keyed by a digest of their bytes. A file without a full
``.symtab`` gets its names from its separate debug file when one is found
(:class:`~bpftop.symbols.elf.debuginfo.DebugFinder`). With a
:class:`~bpftop.symbols.elf.disk_cache.DiskCache`, indexes of files with a
build-id are also kept on disk across runs, and so is what their DWARF
answered (:class:`~bpftop.symbols.dwarf.cache.DwarfCache`, in the same folder).
Code no symbol names is grouped by the ``.eh_frame`` FDE that covers it
(:meth:`ElfCache.function_start`).
Used from one thread.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict

from bpftop.symbols.dwarf.cache import DwarfCache
from bpftop.symbols.dwarf.index import DwarfIndex
from bpftop.symbols.elf.debuginfo import DebugFinder
from bpftop.symbols.elf.disk_cache import DiskCache, read_build_id
from bpftop.symbols.elf.index import ElfError, ElfIndex
from bpftop.symbols.proc.maps import FileId
from bpftop.symbols.unwind.fde_index import FdeIndex

DEFAULT_MAX_FILES = 512
DEFAULT_MAX_DWARF_FILES = 64
DEFAULT_MAX_FDE_FILES = 64


CacheKey = FileId | str
Result = ElfIndex | ElfError


class ElfCache:
    """Least-recently-used cache of parsed ELF files."""

    def __init__(
        self,
        max_files: int = DEFAULT_MAX_FILES,
        *,
        debug_finder: DebugFinder | None = None,
        disk_cache: DiskCache | None = None,
        dwarf_cache: DwarfCache | None = None,
    ) -> None:
        """``dwarf_cache``: where DWARF answers persist (default: the
        ``disk_cache`` folder's, none without a ``disk_cache``)."""
        self._max_files = max_files
        self.disk_cache = disk_cache
        if dwarf_cache is None and disk_cache is not None:
            dwarf_cache = DwarfCache(disk_cache.directory)
        self.dwarf_cache = dwarf_cache
        self._dwarf: OrderedDict[tuple[str, str], DwarfIndex] = OrderedDict()
        # id(index) -> (index, its FDE ranges): the index is kept so its id stays its own.
        self._fdes: OrderedDict[int, tuple[ElfIndex, FdeIndex]] = OrderedDict()
        self.debug_finder = debug_finder if debug_finder is not None else DebugFinder()
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

    def load(
        self,
        path: str,
        expected: FileId | None = None,
        *,
        origin: str | None = None,
        root_prefix: str = "",
    ) -> Result | None:
        """The index of the file at ``path``, parsed at most once per identity.

        None when the file cannot be opened, or, with ``expected``, when its
        identity differs (another file at the same path: refused, not misread).
        ``origin`` is the file's clean path as the target sees it (``path`` may
        be a /proc link) and ``root_prefix`` the target's root
        (``/proc/PID/root``): both are used to find a separate debug file, and
        to tell whether one appeared since an index was stored.
        """
        try:
            with open(path, "rb") as stream:
                file_id = FileId.of(os.fstat(stream.fileno()))
                if expected is not None and file_id != expected:
                    return None
                cached = self.get(file_id)
                if cached is not None:
                    return cached
                build_id = read_build_id(stream) if self.disk_cache is not None else None
                if build_id and self.disk_cache is not None:
                    stored = self.disk_cache.get(build_id, file_id.size, root_prefix)
                    if stored is not None:
                        stored.elf_paths = _paths(path, origin, root_prefix)
                        return self._put(file_id, stored)
                self.parses += 1
                stream.seek(0)
                result = ElfIndex.from_stream(stream)
        except OSError:
            return None
        if isinstance(result, ElfIndex):
            result.elf_paths = _paths(path, origin, root_prefix)
            if not result.has_full_symtab:
                result = self._with_debug_file(result, origin or path, root_prefix)
            if build_id and self.disk_cache is not None and result.build_id == build_id:
                self.disk_cache.put(result, file_id.size)
        return self._put(file_id, result)

    def _with_debug_file(self, index: ElfIndex, origin: str, root_prefix: str) -> ElfIndex:
        """``index`` named by its separate debug file's ``.symtab``, if one is found."""
        found, tried = self.debug_finder.find(origin, index.build_id, index.debuglink, root_prefix)
        index.debug_searched = tried
        if found is None:
            return index
        self.parses += 1
        debug = ElfIndex.load(found)
        if not isinstance(debug, ElfIndex) or debug.source != "SHT_SYMTAB":
            return index
        if index.build_id and debug.build_id and index.build_id != debug.build_id:
            return index  # a debug file for another build: its addresses would lie
        # Kept as the path inside the target's root: a /proc/PID/root prefix
        # dies with that process, and this index outlives it (and goes to disk).
        clean = found.removeprefix(root_prefix) if root_prefix else found
        merged = index.with_symbols_of(debug, f"debug:{clean if clean.startswith('/') else found}")
        merged.debug_searched = tried
        merged.elf_paths = index.elf_paths
        return merged

    def dwarf_for(self, index: ElfIndex) -> DwarfIndex | None:
        """The DWARF of ``index``'s file (its debug file's, else its own), if any.

        Opened lazily on first use and kept (bounded, least recently used).
        """
        paths = list(index.elf_paths)
        if index.source.startswith("debug:"):
            debug = index.source.removeprefix("debug:")
            paths[:0] = [*(root + debug for root in _roots(index.elf_paths)), debug]
        for path in dict.fromkeys(paths):
            key = (path, index.build_id or "")
            dwarf = self._dwarf.get(key)
            if dwarf is None:
                dwarf = self._dwarf[key] = DwarfIndex(path, self.dwarf_cache)
                if index.build_id and _build_id_at(path) not in (index.build_id, None):
                    dwarf.error = "build-id differs"  # another file now at that path
                while len(self._dwarf) > DEFAULT_MAX_DWARF_FILES:
                    self._dwarf.popitem(last=False)[1].close()
            self._dwarf.move_to_end(key)
            if dwarf.has_dwarf:
                return dwarf
        return None

    def function_start(self, index: ElfIndex, vaddr: int) -> int | None:
        """Where the function holding ``vaddr`` starts by ``index``'s file's
        ``.eh_frame`` (for code without a symbol); None if no FDE covers it.
        The ranges are read on first use and kept (bounded, least recently used)."""
        key = id(index)
        found = self._fdes.get(key)
        if found is None or found[0] is not index:
            found = self._fdes[key] = (index, FdeIndex.load(index.elf_paths))
            while len(self._fdes) > DEFAULT_MAX_FDE_FILES:
                self._fdes.popitem(last=False)
        self._fdes.move_to_end(key)
        return found[1].start_of(vaddr)

    def load_bytes(self, data: bytes) -> Result:
        """The index of an in-memory ELF image, parsed once per content."""
        key = "sha256:" + hashlib.sha256(data).hexdigest()
        cached = self.get(key)
        if cached is not None:
            return cached
        self.parses += 1
        return self._put(key, ElfIndex.from_bytes(data))

    def _put(self, key: CacheKey, result: Result) -> Result:
        """Remember ``result`` under ``key``, evicting the least recently used."""
        self._entries[key] = result
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_files:
            self._entries.popitem(last=False)
        return result


def _paths(path: str, origin: str | None, root_prefix: str) -> tuple[str, ...]:
    """Where a file can be opened again: the path used, then its clean path."""
    paths = [path]
    if origin and origin.startswith("/"):
        paths += [root_prefix + origin] if root_prefix else []
        paths.append(origin)
    return tuple(dict.fromkeys(paths))


def _roots(paths: tuple[str, ...]) -> list[str]:
    """The ``/proc/PID/root`` prefixes among the paths a file was opened by."""
    return [p[: p.index("/root/") + 5] for p in paths if p.startswith("/proc/") and "/root/" in p]


def _build_id_at(path: str) -> str | None:
    try:
        with open(path, "rb") as stream:
            return read_build_id(stream)
    except OSError:
        return None
