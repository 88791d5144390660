"""LLVM's and clang's resident pages are released after BCC loads, and nothing else's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bpftop.bpf.compiler_pages import _compiler_ranges

CHILD = """
import bcc  # loads libbcc, LLVM and clang
from bpftop.bpf.compiler_pages import release_compiler_pages

def llvm_kib():
    # Clean pages only this process maps: the kernel leaves pages another
    # process maps too (another BCC tool running) where they are.
    total, ours = 0, False
    for line in open("/proc/self/smaps"):
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
            ours = len(fields) == 6 and "/libLLVM" in fields[5]
        elif ours and fields[0] == "Private_Clean:":
            total += int(fields[1])
    return total

before = llvm_kib()
asked = release_compiler_pages()
print(before, llvm_kib(), asked)
"""


def test_release_drops_most_of_llvms_resident_pages() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    before, after, asked = map(int, out.stdout.split())
    assert before > 10_000, "importing BCC leaves LLVM pages resident"
    assert asked >= 2, "LLVM's and clang's mappings were both asked for"
    assert after < before / 3, (before, after)


def test_only_the_compiler_libraries_are_chosen(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text(
        "7f0000000000-7f0000100000 r-xp 00000000 08:01 1 /usr/lib/libLLVM-14.so.1\n"
        "7f0000200000-7f0000300000 r--p 00000000 08:01 2 /usr/lib/llvm-14/lib/libclang-cpp.so.14\n"
        "7f0000400000-7f0000500000 r-xp 00000000 08:01 3 /usr/lib/libbcc.so.0\n"
        "7f0000600000-7f0000700000 r-xp 00000000 08:01 4 /opt/libclang-things/libc.so.6\n"
        "7f0000800000-7f0000900000 rw-p 00000000 00:00 0\n"
    )
    assert _compiler_ranges(str(maps)) == [
        (0x7F0000000000, 0x7F0000100000),
        (0x7F0000200000, 0x7F0000300000),
    ]
    assert _compiler_ranges(str(tmp_path / "missing")) == []
