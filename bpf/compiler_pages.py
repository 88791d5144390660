"""LLVM's pages out of bpftop's resident memory while no compile needs them.

Owns :func:`release_compiler_pages`. libbcc links LLVM and clang (~110 MB of
code). Importing BCC (the libraries' relocations and static constructors)
leaves ~55 MB of their file pages resident, and a compile ~85 MB, yet between
compiles bpftop runs no LLVM code. ``madvise(MADV_PAGEOUT)`` (Linux 5.4+)
drops those clean file pages from the process (their contents stay: the next
compile faults what it needs back in from the page cache; written pages, which
are not clean file pages, are left as they are; so are pages another process
maps too, e.g. another BCC tool running). ``bench/compile_memory.py``
measures a process that imports BCC and compiles bpftop's program: released
after the import, the compile peaks at 112 MiB instead of 141 (it needs 30 of
those 55 MB back); released after the compile, 73 MB leave the resident set
for the rest of the run. Nothing here raises: a kernel or libc without it
keeps the pages.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os

MADV_PAGEOUT = 21  # <linux/mman.h>
COMPILER_LIBRARIES = ("libLLVM", "libclang")


def release_compiler_pages(maps_path: str = "/proc/self/maps") -> int:
    """Ask the kernel to drop LLVM's and clang's resident file pages; how many
    mappings it was asked for (0: none mapped, or madvise is unavailable)."""
    ranges = _compiler_ranges(maps_path)
    if not ranges:
        return 0
    with contextlib.suppress(OSError, AttributeError, TypeError):  # not glibc
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        return sum(libc.madvise(start, end - start, MADV_PAGEOUT) == 0 for start, end in ranges)
    return 0


def _compiler_ranges(maps_path: str) -> list[tuple[int, int]]:
    ranges = []
    with contextlib.suppress(OSError), open(maps_path) as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and os.path.basename(fields[5]).startswith(COMPILER_LIBRARIES):
                start, end = fields[0].split("-")
                ranges.append((int(start, 16), int(end, 16)))
    return ranges
