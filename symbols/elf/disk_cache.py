"""A persistent on-disk cache of ELF symbol indexes, keyed by build-id and size.

Owns :class:`DiskCache` and :func:`read_build_id`. Parsing libc with its debug
file takes tens of milliseconds and python3.11 more; a later run of bpftop
loads the same indexes from ``/var/cache/bpftop/symbols/<build-id>-<size>.idx``
(configurable; ``BPFTOP_SYMBOL_CACHE_DIR``, empty to turn it off) in about a
millisecond each (``bench/symbols_bench.py`` times both). The build-id is
read straight from the PT_NOTE program headers, without pyelftools, so a hit
costs a few small reads. The file's size is part of the key because a
build-id names the code, not the symbols: a stripped copy has the same
build-id as the original, but another size.

Entries are ``marshal`` data (plain lists of ints and strings: loading them
runs no code) checked field by field; a broken entry is removed and the file
parsed again. An index made without a debug file is stale once one of the
places searched for a debug file holds one (the user installed a -dbgsym
package, maybe inside a container or chroot): it is then rebuilt. Those
places are kept as the target saw them and looked for under the root of the
process asking now, never under a ``/proc/PID/root`` of the one that asked
first. Files without a build-id are not cached here.
Nothing here raises.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import struct
import tempfile
from typing import IO, Any, TypeGuard

from bpftop.symbols.elf.debuginfo import debug_file_appeared
from bpftop.symbols.elf.index import DebugLink, ElfIndex
from bpftop.symbols.elf.load_segments import LoadSegment

DEFAULT_CACHE_DIR = "/var/cache/bpftop/symbols"
CACHE_DIR_ENV = "BPFTOP_SYMBOL_CACHE_DIR"
# 2: keyed by size too; 3: places searched as the target sees them; 4: PLT
# stubs named, size-0 symbols bounded by their section; 5: segments carry their
# flags (the mapping rule needs PF_X), .plt.got stubs named; 6: .init/.fini
# named _init/_fini in stripped files.
FORMAT_VERSION = 6
PT_NOTE = 4
NT_GNU_BUILD_ID = 3
MAX_NOTE_BYTES = 1 << 16
MAX_PROGRAM_HEADERS = 256
# Past this many entries the least recently written ones are removed.
DEFAULT_MAX_ENTRIES = 2000


def default_cache_dir() -> str | None:
    """The cache folder from the environment (None when turned off)."""
    value = os.environ.get(CACHE_DIR_ENV)
    if value is None:
        return DEFAULT_CACHE_DIR
    return value or None


# (e_phoff, e_phentsize, e_phnum) and (p_offset, p_filesz) positions and sizes.
_HEADER = {True: ((32, "Q"), 54, 56), False: ((28, "I"), 42, 44)}
_PHDR = {True: ((8, "Q"), (32, "Q"), 56), False: ((4, "I"), (16, "I"), 32)}


def read_build_id(stream: IO[bytes]) -> str | None:
    """The GNU build-id of an open ELF file, from its PT_NOTE segments."""
    try:
        stream.seek(0)
        ident = stream.read(64)
        if len(ident) < 52 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2):
            return None
        is64, endian = ident[4] == 2, "<" if ident[5] == 1 else ">"
        (phoff_at, phoff_kind), phentsize_at, phnum_at = _HEADER[is64]
        offset_field, size_field, min_entsize = _PHDR[is64]
        phoff = _unpack(endian + phoff_kind, ident, phoff_at)
        phentsize = _unpack(endian + "H", ident, phentsize_at)
        phnum = _unpack(endian + "H", ident, phnum_at)
        if phnum > MAX_PROGRAM_HEADERS or phentsize < min_entsize:
            return None
        stream.seek(phoff)
        table = stream.read(phentsize * phnum)
        for at in range(0, len(table) - phentsize + 1, phentsize):
            if _unpack(endian + "I", table, at) != PT_NOTE:
                continue
            offset = _unpack(endian + offset_field[1], table, at + offset_field[0])
            size = _unpack(endian + size_field[1], table, at + size_field[0])
            stream.seek(offset)
            found = _build_id_in_notes(stream.read(min(size, MAX_NOTE_BYTES)), endian)
            if found:
                return found
    except (OSError, struct.error, ValueError, OverflowError):
        return None
    return None


def stream_key(stream: IO[bytes]) -> tuple[str | None, int]:
    """(build-id or None, size) of an open ELF file: the key of the entries
    here (raises OSError)."""
    size = os.fstat(stream.fileno()).st_size
    return read_build_id(stream), size


def file_key(path: str) -> tuple[str, int] | None:
    """:func:`stream_key` of the ELF file at ``path``; None when it cannot be
    read or has no build-id."""
    try:
        with open(path, "rb") as stream:
            build_id, size = stream_key(stream)
    except OSError:
        return None
    return (build_id, size) if build_id else None


def _unpack(fmt: str, data: bytes, at: int) -> int:
    value: int = struct.unpack_from(fmt, data, at)[0]
    return value


def _build_id_in_notes(data: bytes, endian: str) -> str | None:
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, kind = struct.unpack_from(endian + "III", data, at)
        name_at = at + 12
        desc_at = name_at + ((namesz + 3) & ~3)
        end = desc_at + ((descsz + 3) & ~3)
        if end > len(data) or end <= at:
            return None
        if kind == NT_GNU_BUILD_ID and data[name_at : name_at + namesz] == b"GNU\0" and descsz:
            return data[desc_at : desc_at + descsz].hex()
        at = end
    return None


class EntryStore:
    """Values stored as ``marshal`` files named ``<build-id>-<size><suffix>`` in
    one folder (atomically written; the oldest written go first past
    ``max_entries``). Shared by the symbol and the unwind-table caches."""

    def __init__(self, directory: str, suffix: str, max_entries: int) -> None:
        self.directory = directory
        self.suffix = suffix
        self.max_entries = max_entries

    def path(self, build_id: str, file_size: int) -> str | None:
        if not build_id or any(c not in "0123456789abcdef" for c in build_id):
            return None
        return os.path.join(self.directory, f"{build_id}-{file_size}{self.suffix}")

    def read(self, build_id: str, file_size: int) -> Any:
        """The stored value, or None (missing, or damaged: then removed)."""
        path = self.path(build_id, file_size)
        if path is None:
            return None
        try:
            with open(path, "rb") as stream:
                data = stream.read()
        except OSError:
            return None
        try:
            return marshal.loads(data)
        except Exception:  # marshal raises several kinds on a damaged file
            _remove(path)
            return None

    def remove(self, build_id: str, file_size: int) -> None:
        path = self.path(build_id, file_size)
        if path is not None:
            _remove(path)

    def write(self, build_id: str, file_size: int, value: Any) -> bool:
        """Store ``value`` atomically; False on any error (ignored by callers)."""
        path = self.path(build_id, file_size)
        if path is None:
            return False
        try:
            os.makedirs(self.directory, mode=0o755, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
            with os.fdopen(fd, "wb") as stream:
                stream.write(marshal.dumps(value))
            os.replace(tmp, path)
            self._prune()
        except (OSError, ValueError):
            return False
        return True

    def _prune(self) -> None:
        with os.scandir(self.directory) as found:
            entries = [e for e in found if e.name.endswith(self.suffix) and e.is_file()]
        if len(entries) <= self.max_entries:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for entry in entries[: len(entries) - self.max_entries]:
            _remove(entry.path)


class DiskCache:
    """Symbol indexes stored by build-id in one folder."""

    def __init__(
        self, directory: str = DEFAULT_CACHE_DIR, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        self.directory = directory
        self.max_entries = max_entries
        self._store = EntryStore(directory, ".idx", max_entries)
        self.hits = 0
        self.writes = 0

    def get(self, build_id: str, file_size: int, root_prefix: str = "") -> ElfIndex | None:
        """The stored index of the file with this build-id and size, if it is
        there, valid and not stale for a process whose root is ``root_prefix``
        (a live ``/proc/PID/root``; empty: the host's)."""
        raw = self._store.read(build_id, file_size)
        if raw is None:
            return None
        try:
            index = _decode(raw, build_id, file_size)
        except Exception:
            index = None
        if index is None or _stale(index, root_prefix):
            self._store.remove(build_id, file_size)
            return None
        self.hits += 1
        return index

    def put(self, index: ElfIndex, file_size: int) -> None:
        """Store ``index`` of a file of ``file_size`` bytes under its build-id
        (atomically; errors are ignored)."""
        if self._store.write(index.build_id or "", file_size, _encode(index, file_size)):
            self.writes += 1


def _encode(index: ElfIndex, file_size: int) -> dict[str, Any]:
    starts, sizes, names = index.arrays()
    link = index.debuglink
    return {
        "version": FORMAT_VERSION,
        "build_id": index.build_id,
        "file_size": file_size,
        "source": index.source,
        "segments": [(s.offset, s.filesz, s.vaddr, s.memsz, s.flags) for s in index.segments],
        "starts": starts,
        "sizes": sizes,
        "names": names,
        "debuglink": None if link is None else (link.name, link.crc),
        "debug_searched": list(index.debug_searched),
    }


def _decode(raw: Any, build_id: str, file_size: int) -> ElfIndex | None:
    if not isinstance(raw, dict) or raw.get("version") != FORMAT_VERSION:
        return None
    if raw.get("build_id") != build_id or raw.get("file_size") != file_size:
        return None
    if not isinstance(raw.get("source"), str):
        return None
    starts, sizes, names = raw.get("starts"), raw.get("sizes"), raw.get("names")
    if not (_ints(starts) and _ints(sizes) and _strs(names)):
        return None
    if not len(starts) == len(sizes) == len(names) or starts != sorted(starts):
        return None
    segments = raw.get("segments")
    if not isinstance(segments, list) or not all(
        isinstance(s, tuple) and len(s) == 5 and _ints(list(s)) for s in segments
    ):
        return None
    link = raw.get("debuglink")
    debuglink = None
    if isinstance(link, tuple) and len(link) == 2:
        debuglink = DebugLink(str(link[0]), int(link[1]))
    searched = raw.get("debug_searched")
    index = ElfIndex.from_arrays(
        tuple(LoadSegment(*s) for s in segments),
        (starts, sizes, names),
        raw["source"],
        build_id=build_id,
        debuglink=debuglink,
    )
    index.debug_searched = tuple(searched) if _strs(searched) else ()
    return index


def _ints(values: object) -> TypeGuard[list[int]]:
    return isinstance(values, list) and all(type(v) is int for v in values)


def _strs(values: object) -> TypeGuard[list[str]]:
    return isinstance(values, list) and all(type(v) is str for v in values)


def _stale(index: ElfIndex, root_prefix: str) -> bool:
    """True when a debug file appeared where none was found before."""
    return not index.has_full_symtab and debug_file_appeared(index.debug_searched, root_prefix)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
