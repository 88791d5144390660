"""Rust names demangled as rustfilt prints them, checked against c++filt
(binutils reads both Rust schemes) on every Rust name in the .symtab of a
real binary that rustc builds here: its own code with the default (legacy)
mangling and with v0, and the standard library's (v0). Demangling never
writes to stdout or stderr."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bpftop.symbols.names.demangle import demangle
from bpftop.symbols.names.rust import demangle_rust

SOURCE = Path(__file__).parent / "fixtures" / "rust_names.rs"
CARGO_RUSTC = Path.home() / ".cargo" / "bin" / "rustc"
# Where c++filt's form differs from rustfilt's, rustfilt's (c++filt leaves
# legacy's $u..$ escapes of non-ASCII names as they are, and types constants).
RUSTFILT_FORM = {
    "_ZN10rust_names13gr$uf6$$udf$e": "rust_names::größe",
    "_RINvCs": "rust_names::konst::<-5, true, 'é'>",
}


def _rustc() -> str:
    found = shutil.which("rustc") or (str(CARGO_RUSTC) if CARGO_RUSTC.exists() else None)
    if found is None:
        pytest.skip("rustc is not installed (rustup's stable toolchain provides it)")
    return found


@pytest.fixture(scope="module", params=["legacy", "v0"])
def rust_binary(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rust") / "rust_names"
    mangling = [] if request.param == "legacy" else ["-C", "symbol-mangling-version=v0"]
    subprocess.run([_rustc(), "-O", *mangling, "-o", str(out), str(SOURCE)], check=True)
    return out


def _rust_names(binary: Path) -> list[str]:
    text = subprocess.run(["nm", str(binary)], check=True, capture_output=True, text=True).stdout
    names = {line.split()[-1] for line in text.splitlines() if line.split()}
    return sorted(n for n in names if n.startswith("_R") or re.search(r"17h[0-9a-f]{16}E", n))


def _cxxfilt_as_rustfilt(names: list[str]) -> list[str]:
    """c++filt's Rust names without what rustfilt leaves out: crate hashes
    (``[0123abcd]``), legacy's ``::h<hash>``, constants' types."""
    text = subprocess.run(
        ["c++filt", "-s", "rust"], input="\n".join(names), check=True, capture_output=True,
        text=True,
    ).stdout  # fmt: skip
    shown = []
    for line in text.splitlines():
        line = re.sub(r"\[[0-9a-f]+\]", "", line)
        line = re.sub(r"::h[0-9a-f]{16}$", "", line)
        shown.append(re.sub(r": (?:[ui](?:8|16|32|64|128|size)|bool|char)\b", "", line))
    return shown


def test_every_rust_name_of_a_real_binary(rust_binary: Path) -> None:
    names = _rust_names(rust_binary)
    assert len(names) > 500
    assert any("for<'a" in demangle(n) for n in names), "a higher-ranked lifetime is covered"
    expected = _cxxfilt_as_rustfilt(names)
    differ = {}
    for name, want in zip(names, expected, strict=True):
        shown = demangle(name)
        assert shown != name, f"{name} left mangled"
        if shown != want:
            differ[name] = (want, shown)
    for name, (want, shown) in differ.items():
        rustfilt = next((v for k, v in RUSTFILT_FORM.items() if name.startswith(k)), None)
        assert shown == rustfilt, (name, want, shown)


def test_demangling_writes_nothing(rust_binary: Path) -> None:
    """Every name demangled in a fresh interpreter: its stdout and stderr stay empty."""
    code = "import sys\nfrom bpftop.symbols.names.demangle import demangle\n"
    code += "names = sys.stdin.read().split()\nshown = [demangle(n) for n in names]\n"
    code += "assert len(shown) == len(names)\n"
    done = subprocess.run(
        [sys.executable, "-c", code], input="\n".join(_rust_names(rust_binary)),
        capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")


@pytest.mark.parametrize(
    ("mangled", "shown"),
    [
        ("_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar"),
        ("_RNCNvCs1234_7mycrate4main0B3_", "mycrate::main::{closure#0}"),
        ("_RINvCs1234_7mycrate1fKj1f_E", "mycrate::f::<31>"),
        ("_RINvCs1234_7mycrate1fFG_RL0_hEuE", "mycrate::f::<for<'a> fn(&'a u8)>"),
        ("_RINvCs1234_7mycrate1fFUKCmEmE", 'mycrate::f::<unsafe extern "C" fn(u32) -> u32>'),
        ("_RINvCs1234_7mycrate1fATahEj3_E", "mycrate::f::<[(i8, u8); 3]>"),
        ("_RNvCs1234_7mycrate3foo.llvm.8837", "mycrate::foo"),
    ],
)
def test_shapes(mangled: str, shown: str) -> None:
    assert demangle_rust(mangled) == shown


@pytest.mark.parametrize(
    "broken", ["_R", "_RNvC", "_RNvCs1234_7mycrate99foo", "_RB9_", "_RINvC1fKcfffffffff_E", "_RX"]
)
def test_unreadable_names_give_none(broken: str) -> None:
    assert demangle_rust(broken) is None
    assert demangle(broken) == broken


def test_non_ascii_digits_never_raise() -> None:
    """str.isdigit() takes "²"; a length read from it must not reach int()."""
    for name in ("_RINvNtC3std3mem8align_ofjEC3foo²", "_RNvC²3foo", "_ZN3foo²3barE"):
        assert demangle_rust(name) is None  # raised ValueError before
        assert demangle(name) == name
