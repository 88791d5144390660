"""Finding the separate debug file of a stripped ELF file.

Owns :class:`DebugFinder`, which knows the debug root (``/usr/lib/debug`` by
default, configurable for tests and odd distributions) and tries, in order:

1. by build-id: ``<root>/.build-id/xx/rest.debug``;
2. by ``.gnu_debuglink``: the binary's directory, its ``.debug/`` subdirectory,
   and ``<root>/<binary's directory>/``, accepting a file only when its CRC32
   matches the one the link records.

Each place is looked for inside the target's root first (``/proc/PID/root``
plus the binary's path as the target sees it: :func:`inside_root`) and then
on the host. The places searched are kept as the target sees them (no
``/proc/PID/root`` prefix, which dies with that process), so a later process
of the same root can tell that a debug file appeared since
(:func:`debug_file_appeared`). The debug file's ``.symtab`` uses the same ELF
virtual addresses as the stripped file, so its names index the stripped file
directly. Nothing here raises.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from bpftop.symbols.elf.index import DebugLink

DEFAULT_DEBUG_ROOT = "/usr/lib/debug"
CRC_CHUNK_BYTES = 1 << 20
# A debug file larger than this is not CRC-checked (nor believed).
MAX_DEBUG_FILE_BYTES = 4 << 30


@dataclass(frozen=True, slots=True)
class DebugCandidate:
    """One place a debug file may be, and the CRC it must have (if any)."""

    path: str
    crc: int | None


def build_id_path(root: str, build_id: str) -> str | None:
    """``<root>/.build-id/xx/rest.debug`` for a hex build-id, or None if it is odd."""
    build_id = build_id.lower()
    if len(build_id) < 4 or any(c not in "0123456789abcdef" for c in build_id):
        return None
    return f"{root}/.build-id/{build_id[:2]}/{build_id[2:]}.debug"


def inside_root(path: str, root_path: str) -> str:
    """``path`` (as /proc/PID/maps shows it) as the process sees it: a chroot's
    files show with the chroot's folder ``root_path`` (``/proc/PID/root``'s
    target) in front, which the process does not see; other paths are kept."""
    root = root_path.rstrip("/")
    if root and path.startswith(root + "/"):
        return path[len(root) :]
    return path


def debug_file_appeared(searched: tuple[str, ...], root_prefix: str = "") -> bool:
    """True when one of the places searched (as the target sees them) now holds
    a file, under the root ``root_prefix`` (a live ``/proc/PID/root``) or on
    the host."""
    prefixes = [root_prefix, ""] if root_prefix else [""]
    return any(os.path.isfile(prefix + path) for path in searched for prefix in prefixes)


def file_crc32(path: str) -> int | None:
    """The CRC32 (the one ``.gnu_debuglink`` uses) of a file, or None if unreadable."""
    crc = 0
    try:
        with open(path, "rb") as stream:
            if os.fstat(stream.fileno()).st_size > MAX_DEBUG_FILE_BYTES:
                return None
            while chunk := stream.read(CRC_CHUNK_BYTES):
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return None
    return crc & 0xFFFFFFFF


class DebugFinder:
    """Finds the debug file for a binary by build-id and by debuglink."""

    def __init__(self, debug_root: str = DEFAULT_DEBUG_ROOT) -> None:
        self.debug_root = debug_root.rstrip("/") or "/"

    def candidates(
        self,
        binary_path: str,
        build_id: str | None,
        debuglink: DebugLink | None,
        root_prefix: str = "",
    ) -> Iterator[DebugCandidate]:
        """Every place to look, most trusted first (without touching the disk)."""
        prefixes = [root_prefix, ""] if root_prefix else [""]
        if build_id:
            for prefix in prefixes:
                path = build_id_path(prefix + self.debug_root, build_id)
                if path is not None:
                    yield DebugCandidate(path, None)
        if debuglink is None or not binary_path.startswith("/"):
            return
        directory = os.path.dirname(binary_path)
        for prefix in prefixes:
            for folder in (directory, f"{directory}/.debug", self.debug_root + directory):
                yield DebugCandidate(f"{prefix}{folder}/{debuglink.name}", debuglink.crc)

    def find(
        self,
        binary_path: str,
        build_id: str | None,
        debuglink: DebugLink | None,
        root_prefix: str = "",
    ) -> tuple[str | None, tuple[str, ...]]:
        """The first debug file that exists and checks out, and every path
        tried, as the target sees it (without ``root_prefix``; host and root
        places of the same name once). ``binary_path``: the path inside the
        target's root."""
        tried: dict[str, None] = {}
        seen: set[str] = set()
        for candidate in self.candidates(binary_path, build_id, debuglink, root_prefix):
            if candidate.path in seen:
                continue
            seen.add(candidate.path)
            tried[_unprefixed(candidate.path, root_prefix)] = None
            if not os.path.isfile(candidate.path):
                continue
            if os.path.realpath(candidate.path) == os.path.realpath(binary_path):
                continue  # the binary itself (debuglink named its own file)
            if candidate.crc is not None and file_crc32(candidate.path) != candidate.crc:
                continue
            return candidate.path, tuple(tried)
        return None, tuple(tried)


def _unprefixed(path: str, root_prefix: str) -> str:
    if root_prefix and path.startswith(root_prefix + "/"):
        return path[len(root_prefix) :]
    return path
