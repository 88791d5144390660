"""Short C++ names (``--names short``): what ``c++filt -p`` prints (libiberty
without parameters, as perf names functions), checked name by name on tricky
shapes and on every C++ name libstdc++ exports."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bpftop.symbols.names.short import short_name

LIBSTDCXX = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")

VECTOR = "std::vector<int, std::allocator<int> >"
LAMBDA = "X::f(int) const::{lambda()#1}"
DROP = "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>"
SHAPES = [
    ("foo::bar(int, char const*)", "foo::bar"),
    (f"{VECTOR}::push_back(int const&)", f"{VECTOR}::push_back"),
    ("int foo<int>(int)", "foo<int>"),  # a template instance prints its return type
    ("std::pair<int, int> make<std::pair<int, int> >(int)", "make<std::pair<int, int> >"),
    ("Foo::bar() const &", "Foo::bar"),
    ("Foo::operator()(int) const", "Foo::operator()"),
    ("Foo::operator unsigned int() const", "Foo::operator unsigned int"),
    ("operator new(unsigned long)", "operator new"),
    ("bool operator< <Foo>(Foo const&, Foo const&)", "operator< <Foo>"),
    ("(anonymous namespace)::worker(void*)", "(anonymous namespace)::worker"),
    (f"{LAMBDA}::operator()() const", f"{LAMBDA}::operator()"),  # a local's scope
    ("run_throws(long) [clone .cold]", "run_throws"),
    ("vtable for Foo", "vtable for Foo"),
    # Not C++: kept as they are
    ("main", "main"),
    (DROP, DROP),
    ("<std::path::PathBuf>::new", "<std::path::PathBuf>::new"),
    ("", ""),
]  # fmt: skip


@pytest.mark.parametrize(("full", "short"), SHAPES)
def test_shapes(full: str, short: str) -> None:
    assert short_name(full) == short


def test_a_function_returning_a_function_pointer_keeps_a_name() -> None:
    """The one shape read wrongly (the return type wraps the name): the result
    is still a name of that function, never an empty string."""
    assert short_name("void (*signal_handler(int))(int)")


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="binutils' c++filt is needed")
def test_every_libstdcxx_name_as_cxxfilt_p_prints_it() -> None:
    """c++filt's full names shortened here equal ``c++filt -p``'s (5,864 names;
    70,133 of LLVM's, libbcc's and libclang-cpp's agreed too when measured)."""
    text = subprocess.run(
        ["nm", "-D", "--defined-only", str(LIBSTDCXX)], check=True, capture_output=True, text=True
    ).stdout
    names = sorted({line.split()[-1].split("@")[0] for line in text.splitlines()})
    names = [n for n in names if n.startswith("_Z")]
    assert len(names) > 3000
    full, short = (
        subprocess.run(
            ["c++filt", *flags], input="\n".join(names), check=True, capture_output=True, text=True
        ).stdout.splitlines()
        for flags in ([], ["-p"])
    )
    wrong = [(f, want, short_name(f)) for f, want in zip(full, short, strict=True)]
    wrong = [w for w in wrong if w[1] != w[2]]
    assert not wrong, (len(wrong), wrong[:5])
