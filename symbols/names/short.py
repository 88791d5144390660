"""Short C++ function names, as perf shows them: no parameters, no return type.

Owns :func:`short_name` and :func:`is_cxx` (which names it applies to:
C++ symbols, never Rust's legacy ones, which share their ``_ZN`` form). It
works on the demangled text (what c++filt prints): the parameter list is
the parenthesised group at the end (after ``const``/``&``/``noexcept``
qualifiers are taken off), and the return type,
which the demangler prints for template function instances, is everything up
to the last space outside brackets before the name (``operator`` names keep
their spaces: ``operator new``, ``operator unsigned int``). GCC's clone
suffixes (`` [clone .cold]``) go too, so a function's cold part is named as
the function, as ``c++filt -p`` (libiberty without DMGL_PARAMS, what perf
uses) names it. A name that is not of that shape
(C, Rust, Python, a special name such as ``vtable for X``) comes back as it
was. Nothing here raises.
"""

from __future__ import annotations

import re
from functools import lru_cache

from bpftop.symbols.names.demangle import is_rust_legacy

# Trailing qualifiers of a member function, after its parameter list.
_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept", " transaction_safe")
_CLONE = re.compile(r"(?: \[clone [^\]]*\])+$")
_OPENERS = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(_OPENERS.values())
# A local entity's scope: "f(int) const::{lambda()#1}": that space is no
# return type's end.
_LOCAL_SCOPE = re.compile(r"(?:(?:const|volatile|&&|&|noexcept) ?)+::")
_SPECIAL = re.compile(r"^[a-z][a-z-]*(?: [a-z-]+)* (?:for|to) ")


def is_cxx(mangled: str | None) -> bool:
    """True for a C++ (Itanium ABI) symbol name as the symbol table spells it."""
    if mangled is None or not mangled.startswith(("_Z", "__Z")):
        return False
    return not is_rust_legacy(mangled)


@lru_cache(maxsize=1 << 16)
def short_name(name: str) -> str:
    """``name`` without its parameter list and return type (see the module)."""
    clone = _CLONE.search(name)
    body = name[: clone.start()] if clone else name
    if _SPECIAL.match(body):
        return name  # "vtable for X", "non-virtual thunk to X::f(int)": kept whole
    body = _without_qualifiers(body)
    if not body.endswith(")"):
        return name
    open_at = _matching_open(body)
    if open_at <= 0:
        return name
    head = body[:open_at]
    start = _name_start(head)
    return head[start:] or name


def _without_qualifiers(body: str) -> str:
    changed = True
    while changed:
        changed = False
        for qualifier in _QUALIFIERS:
            if body.endswith(qualifier):
                body = body[: -len(qualifier)]
                changed = True
    return body


def _matching_open(body: str) -> int:
    """Where the parenthesis closed by ``body``'s last character opens (-1: none)."""
    depth = 0
    for at in range(len(body) - 1, -1, -1):
        char = body[at]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                return at
    return -1


def _name_start(head: str) -> int:
    """Where the function's qualified name starts in ``head``: after the last
    space outside brackets that comes before any ``operator`` keyword."""
    depth, start, at = 0, 0, 0
    while at < len(head):
        if depth == 0 and head.startswith("operator", at) and _word_starts(head, at):
            return start  # "operator<", "operator new": the rest is the name
        char = head[at]
        if char in _OPENERS:
            depth += 1
        elif char in _CLOSERS:
            depth = max(0, depth - 1)
        elif char == " " and depth == 0 and not _LOCAL_SCOPE.match(head, at + 1):
            start = at + 1
        at += 1
    return start


def _word_starts(text: str, at: int) -> bool:
    return at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")
