"""Kernel symbols: fake kallsyms text, the hidden case, and the real file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bpftop.symbols import kallsyms
from bpftop.symbols.frame import Unresolved
from bpftop.symbols.kallsyms import KernelSymbols, _fixed_width, read_ahead
from bpftop.symbols.symbolizer import Symbolizer

FAKE = """\
ffffffff81000000 T _stext
ffffffff81000000 t _text_local_alias
ffffffff81001000 T do_one
ffffffff81001080 t helper_two
ffffffff81002000 D some_data
ffffffff81003000 W weak_three
ffffffff81004000 T _etext
ffffffffc0100000 t ext4_thing\t[ext4]
ffffffffc0100100 T ext4_other\t[ext4]
ffffffffc0200000 t nf_hook\t[nf_tables]
not a line
"""

HIDDEN = """\
0000000000000000 T _stext
0000000000000000 T do_one
0000000000000000 t ext4_thing\t[ext4]
"""


def test_lookup_in_core_kernel() -> None:
    table = KernelSymbols.from_text(FAKE)
    assert not table.hidden
    frame = table.lookup(0xFFFFFFFF81001010)
    assert (frame.function, frame.module, frame.offset, frame.kernel) == (
        "do_one", "[kernel]", 0x10, True,
    )  # fmt: skip
    assert table.lookup(0xFFFFFFFF81001080).function == "helper_two"
    # data symbols are not functions: an address there still belongs to helper_two
    assert table.lookup(0xFFFFFFFF81002010).function == "helper_two"
    assert table.lookup(0xFFFFFFFF81003004).function == "weak_three"
    assert table.lookup(0xFFFFFFFF81000000).function == "_stext"  # global wins


def test_lookup_in_modules() -> None:
    table = KernelSymbols.from_text(FAKE)
    frame = table.lookup(0xFFFFFFFFC0100104)
    assert (frame.function, frame.module, frame.offset) == ("ext4_other", "[ext4]", 4)
    assert table.lookup(0xFFFFFFFFC0200001).module == "[nf_tables]"


def test_outside_every_symbol() -> None:
    table = KernelSymbols.from_text(FAKE)
    below = table.lookup(0xFFFFFFFF80000000)
    assert below.function is None and below.reason is Unresolved.UNMAPPED and below.kernel
    far = table.lookup(0xFFFFFFFFC0200000 + (4 << 20))
    assert far.function is None and far.reason is Unresolved.UNMAPPED


def test_all_zero_addresses_mean_hidden() -> None:
    table = KernelSymbols.from_text(HIDDEN)
    assert table.hidden
    frame = table.lookup(0xFFFFFFFF81001010)
    assert frame.function is None and frame.reason is Unresolved.KERNEL_HIDDEN
    assert frame.kernel and frame.offset == 0xFFFFFFFF81001010


def test_unreadable_file_is_hidden(tmp_path) -> None:
    table = KernelSymbols.load(str(tmp_path / "nope"))
    assert table.hidden and table.error is not None
    assert table.lookup(0xFFFFFFFF81000000).reason is Unresolved.KERNEL_HIDDEN


def test_symbolizer_kernel_frames_return_address_rule(tmp_path) -> None:
    path = tmp_path / "kallsyms"
    path.write_text(FAKE)
    sym = Symbolizer(kallsyms_path=str(path))
    # innermost at do_one's start; a return address at helper_two's start
    frames = sym.kernel_frames([0xFFFFFFFF81001000, 0xFFFFFFFF81001080, 0xFFFFFFFF81001090])
    assert [f.function for f in frames] == ["do_one", "do_one", "helper_two"]
    assert [f.offset for f in frames] == [0, 0x80, 0x10]
    assert not sym.kernel_symbols.hidden
    path.write_text(HIDDEN)  # loaded once: a later change is not seen
    assert sym.kernel_frames([0xFFFFFFFF81001000])[0].function == "do_one"


@pytest.mark.skipif(os.geteuid() != 0, reason="real kallsyms addresses need root")
def test_real_kallsyms_resolves_a_known_symbol() -> None:
    with open("/proc/kallsyms") as f:
        rows = [line.split() for line in f]
    wanted = {"do_sys_openat2", "vfs_read", "schedule", "do_syscall_64"}
    found = [(int(r[0], 16), r[2]) for r in rows if len(r) >= 3 and r[2] in wanted]
    found = [(addr, name) for addr, name in found if addr]
    assert found, "none of the expected kernel functions in /proc/kallsyms"
    table = KernelSymbols.load()
    assert not table.hidden and len(table) > 1000
    for addr, name in found:
        assert table.lookup(addr).function == name
        inside = table.lookup(addr + 1)
        assert (inside.function, inside.offset, inside.module) == (name, 1, "[kernel]")


def _same_lookups(a: KernelSymbols, b: KernelSymbols, addresses: list[int]) -> None:
    assert (a.hidden, len(a)) == (b.hidden, len(b))
    for addr in addresses:
        fa, fb = a.lookup(addr), b.lookup(addr)
        assert (fa.function, fa.module, fa.offset, fa.reason) == (
            fb.function, fb.module, fb.offset, fb.reason,
        ), hex(addr)  # fmt: skip


def test_the_kernels_own_format_is_read_as_arrays_with_the_same_answers(tmp_path) -> None:
    good = "".join(f"{line}\n" for line in FAKE.splitlines() if line != "not a line")
    assert _fixed_width(good.encode()) is not None, "the array parser takes this file"
    assert _fixed_width(FAKE.encode()) is None, "a line it cannot read: the line parser"
    path = tmp_path / "kallsyms"
    path.write_text(good)
    addresses = [int(line.split()[0], 16) + d for line in good.splitlines() for d in (0, 1, 0x90)]
    _same_lookups(KernelSymbols.load(str(path)), KernelSymbols.from_text(good), addresses)
    path.write_text(HIDDEN)
    _same_lookups(KernelSymbols.load(str(path)), KernelSymbols.from_text(HIDDEN), addresses)


@pytest.mark.skipif(os.geteuid() != 0, reason="real kallsyms addresses need root")
def test_the_real_file_reads_the_same_both_ways() -> None:
    with open("/proc/kallsyms", "rb") as f:
        data = f.read()
    fast = _fixed_width(data)
    assert fast is not None, "this kernel's /proc/kallsyms is read as arrays"
    slow = KernelSymbols.from_text(data.decode(errors="replace"))
    _same_lookups(fast, slow, [addr + 3 for addr in slow._starts])


def test_a_prefetched_kernel_table_is_read_before_its_first_use(tmp_path: Path) -> None:
    path = tmp_path / "kallsyms"
    path.write_text("ffffffff81000000 T _stext\nffffffff81000100 t do_thing\n")
    prefetched = Symbolizer(kallsyms_path=str(path), prefetch_kernel=True)
    reading = prefetched._kernel_reading
    assert reading is not None and reading.thread.name == "bpftop-kallsyms"
    reading.thread.join()
    path.unlink()  # gone before the first use: the table was read on the thread
    assert [f.label for f in prefetched.kernel_frames([0xFFFFFFFF81000110])] == ["do_thing"]
    missing = Symbolizer(kallsyms_path=str(tmp_path / "none"), prefetch_kernel=True)
    assert missing.kernel_symbols.hidden, "unreadable: hidden, as when read on first use"


def test_a_read_ahead_is_taken_by_the_next_symbolizer_once(tmp_path: Path) -> None:
    """``read_ahead`` at launch: the next prefetching Symbolizer takes that read
    (the file may be gone by then), the one after reads again."""
    path = tmp_path / "kallsyms"
    path.write_text("ffffffff81000000 T _stext\nffffffff81000100 t do_thing\n")
    read_ahead(str(path))
    read_ahead(str(path))  # one read per path until it is taken
    started = kallsyms._AHEAD[str(path)]
    started.thread.join()
    path.write_text("ffffffff81000000 T _stext\nffffffff81000100 t other_thing\n")
    first = Symbolizer(kallsyms_path=str(path), prefetch_kernel=True)
    assert first._kernel_reading is started
    assert [f.label for f in first.kernel_frames([0xFFFFFFFF81000110])] == ["do_thing"]
    second = Symbolizer(kallsyms_path=str(path), prefetch_kernel=True)
    assert [f.label for f in second.kernel_frames([0xFFFFFFFF81000110])] == ["other_thing"]
    assert str(path) not in kallsyms._AHEAD
