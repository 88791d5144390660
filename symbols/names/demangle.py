"""Demangling C++ and Rust (legacy and v0) symbol names for display.

Owns :func:`demangle`. C++ (Itanium ABI, ``_Z...``) goes through the
``cxxfilt`` package (ctypes over libstdc++'s ``__cxa_demangle``, the very
code c++filt and gdb use). Rust symbols, in both schemes (legacy
``_ZN...17h<16 hex>E``, tried before C++ since it is also valid Itanium
syntax, and v0 ``_R...``), go through
:func:`~bpftop.symbols.names.rust.demangle_rust`, into the form rustfilt
prints (no crate hashes, no legacy ``::h<hash>``). A name that is not
mangled, or fails to demangle, comes back unchanged: this never raises and
never writes to stdout or stderr. Results are cached per name.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from bpftop.symbols.names.rust import demangle_rust


def _optional(module: str) -> Any:
    """The module, or None: without it names are shown as the file spells them."""
    try:
        return importlib.import_module(module)
    except Exception:  # pragma: no cover - a declared dependency (it loads libstdc++)
        return None


cxxfilt: Any = _optional("cxxfilt")

CACHE_SIZE = 1 << 17
# rustc's legacy hash: the last path segment is "h" and 16 hex digits.
_RUST_LEGACY = re.compile(r"^_?_ZN.*17h[0-9a-f]{16}E(\.[\w.$]*)?$")


def is_rust_legacy(name: str) -> bool:
    return _RUST_LEGACY.match(name) is not None


def _call(function: Callable[[str], str], name: str) -> str | None:
    try:
        result = function(name)
    except Exception:  # the libraries raise their own kinds on odd input
        return None
    return result if isinstance(result, str) and result else None


def _cxx(name: str) -> str | None:
    if cxxfilt is None:
        return None
    return _call(lambda text: str(cxxfilt.demangle(text, external_only=False)), name)


@lru_cache(maxsize=CACHE_SIZE)
def demangle(name: str) -> str:
    """The display form of a symbol name (unchanged when not mangled)."""
    demangled: str | None = None
    if name.startswith("_R") or is_rust_legacy(name):
        demangled = demangle_rust(name)
    if demangled is None and name.startswith(("_Z", "__Z")):
        demangled = _cxx(name)
    return demangled if demangled is not None else name


def display_and_mangled(name: str) -> tuple[str, str | None]:
    """``(display name, mangled name or None when demangling changed nothing)``."""
    shown = demangle(name)
    return shown, (name if shown != name else None)
