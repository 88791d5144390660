"""Finding the separate debug file of a stripped ELF file.

Owns :class:`DebugFinder`, which knows the debug root (``/usr/lib/debug`` by
default, configurable for tests and odd distributions) and tries, in order:

1. by build-id: ``<root>/.build-id/xx/rest.debug``;
2. by ``.gnu_debuglink``: the binary's directory, its ``.debug/`` subdirectory,
   and ``<root>/<binary's directory>/``, accepting a file only when its CRC32
   matches the one the link records.

Each place is looked for inside the target's mount namespace first
(``/proc/PID/root``) and then on the host. The debug file's ``.symtab`` uses
the same ELF virtual addresses as the stripped file, so its names index the
stripped file directly. Nothing here raises.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from bpftop.symbols.elf import DebugLink

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
        """The first debug file that exists and checks out, and every path tried."""
        tried: list[str] = []
        seen: set[str] = set()
        for candidate in self.candidates(binary_path, build_id, debuglink, root_prefix):
            if candidate.path in seen:
                continue
            seen.add(candidate.path)
            tried.append(candidate.path)
            if not os.path.isfile(candidate.path):
                continue
            if os.path.realpath(candidate.path) == os.path.realpath(binary_path):
                continue  # the binary itself (debuglink named its own file)
            if candidate.crc is not None and file_crc32(candidate.path) != candidate.crc:
                continue
            return candidate.path, tuple(tried)
        return None, tuple(tried)
