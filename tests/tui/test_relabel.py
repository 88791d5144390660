"""Frame names for --offsets, --mangled and --names short (the collector's
stack cache relabels each distinct stack once)."""

from __future__ import annotations

from bpftop.symbols.frame import Frame, Unresolved
from bpftop.tui.collect.stacks import relabel

CXX = Frame("ns::f(int)", "/bin/app", 0x1F, mangled="_ZN2ns1fEi")
KERNEL = Frame("do_syscall_64", "[kernel]", 0x5A, kernel=True)
UNKNOWN = Frame(None, "/lib/libz.so.1", 0x1A2B, reason=Unresolved.NO_SYMBOLS)


def test_offsets_name_every_named_frame_with_its_offset() -> None:
    assert relabel(CXX, offsets=True, mangled=False).label == "ns::f(int)+0x1f"
    assert relabel(KERNEL, offsets=True, mangled=False).label == "do_syscall_64+0x5a"
    assert relabel(KERNEL, offsets=True, mangled=False).kernel


def test_mangled_keeps_the_symbol_table_spelling() -> None:
    assert relabel(CXX, offsets=False, mangled=True).label == "_ZN2ns1fEi"
    assert relabel(CXX, offsets=True, mangled=True).label == "_ZN2ns1fEi+0x1f"
    assert relabel(KERNEL, offsets=False, mangled=True).label == "do_syscall_64"


def test_unnamed_frames_keep_module_and_offset() -> None:
    for offsets, mangled in ((True, False), (False, True), (True, True)):
        assert relabel(UNKNOWN, offsets, mangled) == UNKNOWN
        assert UNKNOWN.label == "libz.so.1+0x1a2b"


RUST = Frame("core::fmt::write", "/bin/app", 0x10, mangled="_ZN4core3fmt5write17h0123456789abcdefE")
TEMPLATE = Frame("int ns::get<int>(int) const", "/bin/app", 0x8, mangled="_ZNK2ns3getIiEEiT_")
PYTHON = Frame("run (app.py:12)", "app.py", 4)


def test_short_names_drop_cxx_parameters_and_return_types_only() -> None:
    assert relabel(CXX, offsets=False, mangled=False, short=True).label == "ns::f"
    assert relabel(TEMPLATE, offsets=False, mangled=False, short=True).label == "ns::get<int>"
    assert relabel(CXX, offsets=True, mangled=False, short=True).label == "ns::f+0x1f"
    for other in (RUST, PYTHON, KERNEL, UNKNOWN):  # not C++: as they were
        assert relabel(other, offsets=False, mangled=False, short=True) == other
