"""C++ and Rust (legacy and v0) names demangled for display, mangled kept."""

from __future__ import annotations

import subprocess

import pytest

from bpftop.symbols.names.demangle import demangle, display_and_mangled, is_rust_legacy
from bpftop.symbols.symbolizer import Symbolizer

KNOWN = [
    # C++ (what c++filt prints)
    ("_ZN3foo3barEv", "foo::bar()"),
    ("_Z3foov.cold", "foo() [clone .cold]"),
    ("_ZN9__gnu_cxx13new_allocatorIcE8allocateEmPKv",
     "__gnu_cxx::new_allocator<char>::allocate(unsigned long, void const*)"),
    # Rust legacy: the ::h<hash> is dropped for display
    ("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"),
    ("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h7e5b3e1bb6b3b7b2E",
     "std::rt::lang_start::{{closure}}"),
    ("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure"
     "$u7d$$u7d$$GT$17h6a2cb5d7a6b3c5d2E.llvm.12345",
     "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>"),
    # Rust v0
    ("_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example"),
    ("_RINvNtC3std3mem8align_ofjEC3foo", "std::mem::align_of::<usize>"),
    ("_RNvMsr_NtCs3ssYzQotkvD_3std4pathNtB5_7PathBuf3newCs15kBYyAo9fc_7mycrate",
     "<std::path::PathBuf>::new"),
    ("_RNvNtCs1234_7fixrust2v04work", "fixrust::v0::work"),
]  # fmt: skip

NOT_MANGLED = ["main", "_start", "__libc_start_call_main", "_Zbad", "_Rjunk", "", "_R", "_Z"]


@pytest.mark.parametrize(("mangled", "shown"), KNOWN)
def test_known_names(mangled: str, shown: str) -> None:
    assert demangle(mangled) == shown
    assert display_and_mangled(mangled) == (shown, mangled)


@pytest.mark.parametrize("name", NOT_MANGLED)
def test_plain_and_broken_names_are_unchanged(name: str) -> None:
    assert demangle(name) == name
    assert display_and_mangled(name) == (name, None)


def test_rust_legacy_detection() -> None:
    assert is_rust_legacy("_ZN4core3fmt5write17h0123456789abcdefE")
    assert not is_rust_legacy("_ZN3foo3barEv")


def test_cxx_names_match_cxxfilt(cxx_built, nm) -> None:
    mangled = [s.name for s in nm(cxx_built.pie) if s.name.startswith("_Z")]
    assert len(mangled) > 5
    out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True,
                         check=True).stdout.splitlines()  # fmt: skip
    for name, expected in zip(mangled, out, strict=True):
        if not is_rust_legacy(name):
            assert demangle(name) == expected


@pytest.mark.parametrize("which", ["pie", "nopie"])
def test_live_cxx_process_frames(cxx_built, run, which: str) -> None:
    prog = run(getattr(cxx_built, which))
    sym = Symbolizer()
    expected = {
        "compute": "fixns::compute(std::vector<int, std::allocator<int> > const&, "
        "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
        "scale": "double fixns::scale<double>(double, int)",
        "make": "fixns::Widget::make(int)",
        "legacy": "fixrust::legacy::work",
        "v0": "fixrust::v0::work",
    }
    for key, shown in expected.items():
        frame = sym.user_frames(prog.pid, [prog.addrs[key] + 2])[-1]  # not an inline frame
        assert (frame.function, frame.offset) == (shown, 2), frame
        assert frame.mangled is not None and frame.mangled.startswith(("_Z", "_R"))
        assert frame.raw_function == frame.mangled and frame.label == shown


def test_frame_labels() -> None:
    from bpftop.symbols.frame import Frame, Unresolved

    frame = Frame("foo::bar()", "/usr/lib/libx.so", 0x1C, mangled="_ZN3foo3barEv")
    assert frame.label == "foo::bar()" and frame.label_with_offset == "foo::bar()+0x1c"
    assert frame.raw_function == "_ZN3foo3barEv"
    plain = Frame("main", "/bin/x", 3)
    assert plain.raw_function == "main" and not plain.inlined and plain.line is None
    lost = Frame(None, "/usr/lib/libx.so", 0x1A2B, reason=Unresolved.NO_SYMBOLS)
    assert lost.label == lost.label_with_offset == "libx.so+0x1a2b"
