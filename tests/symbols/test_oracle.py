"""The correctness oracle: our function names against binutils.

For ≥ 2,000 addresses sampled inside the sized functions of /usr/bin/python3.11,
libc and a C++ fixture (PIE and non-PIE), resolved end to end through live
processes (maps, PT_LOAD arithmetic, debug files), the symbol we return must be
the one ``nm`` ranges give, 100% of the time. The reference is ``nm`` on the
file that holds the symbols (the separate debug file when one is installed,
found independently here through ``readelf -n``; else ``nm -D``), so the test
checks our ELF arithmetic and debug-file lookup, not a copy of our own reading.

Names are compared mangled (exact), and displayed names against ``c++filt``.
For the C++ binaries ``addr2line -a -f -i -C`` also checks every address: its
whole inline chain (names, innermost first) must be the frames we return, the
outermost being the symbol's function, and each frame's file:line must be the
one addr2line prints (DWARF line info). addr2line reads DWARF, so
two honest differences are normalized: GCC's ``.cold`` split parts carry the
name of their function in DWARF, and the two functions renamed by ``asm`` labels
to Rust-style symbols are named by their C name in DWARF (skipped for addr2line;
the nm check covers them).
"""

from __future__ import annotations

import bisect
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bpftop.symbols.elf.debuginfo import build_id_path
from bpftop.symbols.names.demangle import is_rust_legacy
from bpftop.symbols.proc.maps import MapEntry
from bpftop.symbols.symbolizer import Symbolizer
from tests.symbols.conftest import NmSymbol, build_id_of, nm_functions

PYTHON = Path("/usr/bin/python3.11")
LIBC = Path("/usr/lib/x86_64-linux-gnu/libc.so.6")
PER_TARGET = {"python": 700, "libc": 700, "cxx_pie": 400, "cxx_nopie": 400}
RENAMED = {"_ZN7fixrust6legacy4work17h0123456789abcdefE", "_RNvNtCs1234_7fixrust2v04work"}
_CLONE = re.compile(r"( \[clone \.[\w.]+\])+$|\.cold$")


def _reference_symbols(path: Path) -> list[NmSymbol]:
    debug = build_id_path("/usr/lib/debug", build_id_of(path))
    if debug is not None and os.path.exists(debug):
        symbols = nm_functions(Path(debug))
    else:
        symbols = nm_functions(path) or nm_functions(path, dynamic=True)
    return [s for s in symbols if s.size > 0]


def _loads(path: Path) -> list[tuple[int, int, int]]:
    """(offset, vaddr, filesz) of each PT_LOAD, per readelf."""
    text = subprocess.run(["readelf", "-lW", str(path)], capture_output=True, text=True).stdout
    out = []
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["LOAD"]:
            out.append((int(parts[1], 16), int(parts[2], 16), int(parts[4], 16)))
    return out


def _runtime_address(
    vaddr: int, loads: list[tuple[int, int, int]], entries: list[MapEntry]
) -> int | None:
    for offset, seg_vaddr, filesz in loads:
        if seg_vaddr <= vaddr < seg_vaddr + filesz:
            file_offset = vaddr - seg_vaddr + offset
            for e in entries:
                if e.offset <= file_offset < e.offset + (e.end - e.start):
                    return e.start + file_offset - e.offset
    return None


def _expected(symbols: list[NmSymbol], starts: list[int], addr: int) -> tuple[set[str], int]:
    """Names of the innermost sized symbols holding ``addr``, and their start."""
    index = bisect.bisect_right(starts, addr) - 1
    holding = [s for s in symbols[max(0, index - 64) : index + 1] if addr < s.start + s.size]
    best = max(s.start for s in holding)
    return {s.name for s in holding if s.start == best}, best


def _cxxfilt(names: list[str]) -> dict[str, str]:
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.splitlines()  # fmt: skip
    return dict(zip(names, out, strict=True))


Where = tuple[str, int] | None


def _addr2line_chains(path: Path, vaddrs: list[int]) -> dict[int, list[tuple[str, Where]]]:
    """addr2line's (function, file:line) chain per address, innermost first."""
    args = ["addr2line", "-a", "-f", "-i", "-C", "-e", str(path), *map(hex, vaddrs)]
    lines = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    result: dict[int, list[tuple[str, Where]]] = {}
    at = 0
    while at < len(lines):
        chain = result.setdefault(int(lines[at], 16), [])
        at += 1
        while at + 1 < len(lines) and not lines[at].startswith("0x"):
            file, _, line = lines[at + 1].split(" (discriminator")[0].rpartition(":")
            known = file != "??" and line.isdigit() and int(line) > 0
            chain.append((lines[at], (file, int(line)) if known else None))
            at += 2
    return result


def _check_target(name: str, path: Path, pid: int, count: int, sym: Symbolizer, rng) -> int:
    real = os.path.realpath(path)
    symbols = sorted(_reference_symbols(path), key=lambda s: s.start)
    starts = [s.start for s in symbols]
    process = sym.prepare(pid)
    assert process.maps is not None
    entries = [e for e in process.maps.entries if os.path.realpath(e.path) == real]
    assert entries, f"{path} is not mapped in {pid}"
    loads = _loads(path)
    samples: list[tuple[int, int]] = []
    while len(samples) < count:
        s = rng.choice(symbols)
        vaddr = s.start + rng.randrange(s.size)
        addr = _runtime_address(vaddr, loads, entries)
        if addr is not None:
            samples.append((vaddr, addr))
    mismatches = []
    frames = {}
    chains = {}
    addrs = dict(samples)
    for vaddr, addr in samples:
        chains[vaddr] = sym.user_frames(pid, [addr])
        frame = chains[vaddr][-1]  # the function's own frame; inline frames come first
        assert not frame.inlined and all(f.inlined for f in chains[vaddr][:-1])
        frames[vaddr] = frame
        names, start = _expected(symbols, starts, vaddr)
        if frame.raw_function not in names or frame.offset != vaddr - start:
            mismatches.append((hex(vaddr), sorted(names), frame))
    assert not mismatches, f"{name}: {len(mismatches)}/{count} differ: {mismatches[:5]}"
    raw = {f.raw_function for f in frames.values() if f.raw_function}
    cxx = sorted(n for n in raw if n.startswith("_Z") and not is_rust_legacy(n))
    if cxx:
        shown = _cxxfilt(cxx)
        for f in frames.values():
            if f.raw_function in shown:
                assert f.function == shown[f.raw_function]
    if name.startswith("cxx"):
        a2l = _addr2line_chains(path, sorted(frames))
        assert len(a2l) == len(frames)
        for vaddr, f in frames.items():
            if f.raw_function in RENAMED:
                continue
            ours = [_CLONE.sub("", g.function or "") for g in chains[vaddr]]
            assert [_CLONE.sub("", n) for n, _ in a2l[vaddr]] == ours, hex(vaddr)
            lines = sym.source_lines(pid, [addrs[vaddr]])
            assert list(lines) == [where for _, where in a2l[vaddr]], hex(vaddr)
    return len(samples)


@pytest.mark.skipif(not (PYTHON.exists() and LIBC.exists()), reason="needs Debian's python3.11")
def test_oracle_agreement_is_total(cxx_built, run) -> None:
    rng = random.Random(20261122)
    sym = Symbolizer()
    python = subprocess.Popen(
        [str(PYTHON), "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert python.stdout is not None and python.stdout.readline().strip() == "ready"
        checked = _check_target("python", PYTHON, python.pid, PER_TARGET["python"], sym, rng)
        checked += _check_target("libc", LIBC, python.pid, PER_TARGET["libc"], sym, rng)
    finally:
        python.kill()
        python.communicate()
    for which in ("pie", "nopie"):
        prog = run(getattr(cxx_built, which))
        key = f"cxx_{which}"
        checked += _check_target(
            key, getattr(cxx_built, which), prog.pid, PER_TARGET[key], sym, rng
        )
    assert checked >= 2000
    print(f"oracle: {checked} addresses, 100% agreement", file=sys.stderr)
