"""End to end on live processes: maps + ELF arithmetic for PIE, non-PIE and
shared-library code, processes that exit, dlopen, the vDSO and anonymous code."""

from __future__ import annotations

import mmap
import os
import subprocess
from pathlib import Path

import pytest

from bpftop.symbols import process as process_module
from bpftop.symbols import symbolizer as symbolizer_module
from bpftop.symbols.elf.index import ElfIndex
from bpftop.symbols.frame import FileOffset, Frame, Unresolved
from bpftop.symbols.proc.maps import ProcessMaps
from bpftop.symbols.symbolizer import Symbolizer

PROGRAM_FUNCTIONS = ("fix_alpha", "fix_beta", "fix_gamma")
OFFSETS = (0, 1, 5, 17)


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _assert_named(frame: Frame, name: str, offset: int, module: Path) -> None:
    assert frame.reason is None, frame
    assert (frame.function, frame.offset, frame.module) == (name, offset, _real(module))
    assert not frame.kernel


@pytest.mark.parametrize("which", ["pie", "nopie"])
def test_executable_functions_resolve(built, run, which: str) -> None:
    path = getattr(built, which)
    prog = run(path)
    sym = Symbolizer()
    sym.prepare(prog.pid)
    for name in PROGRAM_FUNCTIONS:
        for k in OFFSETS:
            addr = prog.addrs[name] + k
            _assert_named(sym.user_frames(prog.pid, [addr])[0], name, k, path)
            if k:  # as a return address: looked up at addr - 1, offset still k
                caller = sym.user_frames(prog.pid, [prog.addrs["fix_gamma"], addr])[1]
                _assert_named(caller, name, k, path)


def test_shared_library_functions_resolve(built, run) -> None:
    prog = run(built.pie_lib)
    sym = Symbolizer()
    for name in ("fixlib_work", "fixlib_inner"):
        for k in OFFSETS:
            frame = sym.user_frames(prog.pid, [prog.addrs[name] + k])[0]
            _assert_named(frame, name, k, built.lib)
    _assert_named(sym.user_frames(prog.pid, [prog.addrs["fix_beta"]])[0], "fix_beta", 0,
                  built.pie_lib)  # fmt: skip


def test_process_that_exits_after_prepare_still_resolves(built, run) -> None:
    prog = run(built.pie_lib)
    sym = Symbolizer()
    sym.prepare(prog.pid)
    prog.finish()
    assert not os.path.exists(f"/proc/{prog.pid}")
    frames = sym.user_frames(prog.pid, [prog.addrs["fixlib_work"] + 3, prog.addrs["fix_beta"] + 9])
    _assert_named(frames[0], "fixlib_work", 3, built.lib)
    _assert_named(frames[1], "fix_beta", 9, built.pie_lib)


def test_return_address_rule_at_a_function_start(built, run, nm) -> None:
    prog = run(built.pie)
    symbols = {s.name: s for s in nm(built.pie)}
    beta = symbols["fix_beta"]
    before = next(s for s in symbols.values() if s.start <= beta.start - 1 < s.start + s.size)
    assert before.name != "fix_beta"
    beta_addr = prog.addrs["fix_beta"]
    sym = Symbolizer()
    inner, caller = sym.user_frames(prog.pid, [beta_addr, beta_addr])
    _assert_named(inner, "fix_beta", 0, built.pie)
    _assert_named(caller, before.name, beta.start - before.start, built.pie)


def test_stripped_executable_keeps_the_file_offset_of_the_function(built, run) -> None:
    """Unnamed code is shown at the file offset where its function starts (its
    .eh_frame FDE's start), whichever instruction was sampled."""
    prog = run(built.stripped)
    sym = Symbolizer()
    frame = sym.user_frames(prog.pid, [prog.addrs["fix_alpha"] + 4])[0]
    assert frame.function is None and frame.reason is Unresolved.NO_SYMBOLS
    assert frame.module == _real(built.stripped)
    # strip keeps the layout: the unstripped twin names what that offset is
    twin = ElfIndex.load(str(built.pie))
    assert isinstance(twin, ElfIndex)
    assert twin.lookup_offset(FileOffset(frame.offset)) == ("fix_alpha", 0)
    assert frame.label == f"{built.stripped.name}+0x{frame.offset:x}"


def test_stripped_with_dynsym_resolves(built, run) -> None:
    prog = run(built.dynsym)
    frame = Symbolizer().user_frames(prog.pid, [prog.addrs["fix_gamma"] + 2])[0]
    _assert_named(frame, "fix_gamma", 2, built.dynsym)


def test_dlopen_rereads_maps_rate_limited(built, run) -> None:
    prog = run(built.dl)
    clock = FakeClock()
    sym = Symbolizer(clock=clock, min_reread_interval_s=0.5)
    process = sym.prepare(prog.pid)
    prog.send(f"dlopen {built.lib}")
    prog.read_until_ready()
    addr = prog.addrs["fixlib_work"] + 6
    clock.now_s += 0.1  # too soon after the last read: no re-read
    assert sym.user_frames(prog.pid, [addr])[0].reason is Unresolved.UNMAPPED
    assert process.maps_reads == 1
    clock.now_s += 1.0
    _assert_named(sym.user_frames(prog.pid, [addr])[0], "fixlib_work", 6, built.lib)
    assert process.maps_reads == 2
    assert sym.user_frames(prog.pid, [16])[0].reason is Unresolved.UNMAPPED  # rate-limited
    assert process.maps_reads == 2


def test_gone_process_is_not_reread(built, run) -> None:
    prog = run(built.pie)
    clock = FakeClock()
    sym = Symbolizer(clock=clock)
    process = sym.prepare(prog.pid)
    prog.finish()
    for _ in range(3):
        clock.now_s += 10
        frame = sym.user_frames(prog.pid, [0x10])[0]
        assert (frame.function, frame.module, frame.reason) == (None, "", Unresolved.UNMAPPED)
    assert process.gone and process.maps_reads == 2  # one attempt found it gone
    _assert_named(sym.user_frames(prog.pid, [prog.addrs["fix_alpha"]])[0], "fix_alpha", 0,
                  built.pie)  # fmt: skip


def test_unknown_pid_is_process_gone() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    frame = Symbolizer().user_frames(dead.pid, [0x401000, 0x401234])[1]
    assert frame.function is None and frame.reason is Unresolved.PROCESS_GONE
    assert frame.offset == 0x401234


def test_recycled_pid_gets_a_fresh_process(built, run, monkeypatch) -> None:
    prog = run(built.pie)
    sym = Symbolizer()
    first = sym.prepare(prog.pid)
    assert sym.prepare(prog.pid) is first
    assert first.start_time is not None
    fake = first.start_time + 1
    monkeypatch.setattr(symbolizer_module, "read_start_time", lambda pid, root: fake)
    monkeypatch.setattr(process_module, "read_start_time", lambda pid, root: fake)
    second = sym.prepare(prog.pid)
    assert second is not first and second.start_time == fake
    sym.forget(prog.pid)
    assert sym.process(prog.pid) is None


def test_results_and_files_are_cached(built, run) -> None:
    one, two = run(built.pie), run(built.pie)
    sym = Symbolizer()
    addr = one.addrs["fix_beta"] + 3
    first = sym.user_frames(one.pid, [addr])[0]
    assert sym.user_frames(one.pid, [addr])[0] is first
    parses = sym.elf_cache.parses
    frame = sym.user_frames(two.pid, [two.addrs["fix_beta"] + 3])[0]
    assert frame == first and sym.elf_cache.parses == parses  # same file: not parsed again


def _own_maps() -> ProcessMaps:
    with open("/proc/self/maps") as f:
        return ProcessMaps.from_text(f.read())


def test_anonymous_executable_memory() -> None:
    before = set(_own_maps().entries)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    region = mmap.mmap(-1, 8192, flags=flags, prot=mmap.PROT_READ | mmap.PROT_EXEC)
    try:
        new = [e for e in _own_maps().entries if e not in before and e.executable]
        assert len(new) == 1 and new[0].path == "", new
        frame = Symbolizer().user_frames(os.getpid(), [new[0].start + 0x10])[0]
        assert frame.function is None and frame.reason is Unresolved.JIT_NO_PERF_MAP
        assert frame.module == "" and frame.offset == new[0].offset + 0x10
    finally:
        region.close()


def test_anonymous_memory_without_code_is_no_jit() -> None:
    """A return address in memory that is not executable (a heap block, a
    stack) is a walk gone wrong, not JIT code wanting a perf map."""
    before = set(_own_maps().entries)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    region = mmap.mmap(-1, 8192, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        new = [e for e in _own_maps().entries if e not in before and e.path == ""]
        assert len(new) == 1 and not new[0].executable, new
        stack = next(e for e in _own_maps().entries if e.path == "[stack]")
        sym = Symbolizer()
        data, on_stack = sym.user_frames(os.getpid(), [new[0].start + 0x10, stack.start + 8])
        assert (data.function, data.module, data.reason) == (None, "", Unresolved.NOT_CODE)
        assert (on_stack.module, on_stack.reason) == ("[stack]", Unresolved.NOT_CODE)
    finally:
        region.close()


def test_vdso_functions_resolve(nm, tmp_path) -> None:
    vdso = next((e for e in _own_maps().entries if e.path == "[vdso]"), None)
    if vdso is None:
        pytest.skip("this process has no vDSO")
    with open("/proc/self/mem", "rb", buffering=0) as mem:
        mem.seek(vdso.start)
        image = tmp_path / "vdso.so"
        image.write_bytes(mem.read(vdso.end - vdso.start))
    symbols = [s for s in nm(image, dynamic=True) if s.size > 4]
    assert symbols
    index = ElfIndex.load(str(image))
    assert isinstance(index, ElfIndex)
    bias = vdso.start - (index.segments[0].vaddr - index.segments[0].offset)
    sym = Symbolizer()
    for s in symbols:
        frame = sym.user_frames(os.getpid(), [bias + s.start + 3])[0]
        aliases = {t.name for t in symbols if t.start == s.start}
        assert frame.function in aliases and frame.offset == 3 and frame.module == "[vdso]"
