"""Rust symbol names (v0 ``_R...`` and legacy ``_ZN...17h<hash>E``) demangled
into the form rustfilt prints: crate hashes and the legacy ``::h<hash>`` left
out, closures as ``{closure#0}``, higher-ranked lifetimes as ``for<'a>``.

Owns :func:`demangle_rust`. A pure parser of the v0 grammar (paths, generic
arguments, types, function signatures, ``dyn`` bounds, binders, integer, bool
and char constants, back-references) and of the legacy escapes (``$LT$``,
``$u7b$``, ``..``). It never prints, never raises: a name it cannot read (a
constant of a kind it does not know, a malformed name, one nested too deep)
gives None, and the caller keeps the name as it was. LLVM's and GCC's
suffixes (``.llvm.123``, ``.cold``) are dropped, as rustfilt drops them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# v0's basic types, by their one-letter tag.
_BASIC = {
    "a": "i8", "b": "bool", "c": "char", "d": "f64", "e": "str", "f": "f32", "h": "u8",
    "i": "isize", "j": "usize", "l": "i32", "m": "u32", "n": "i128", "o": "u128",
    "s": "i16", "t": "u16", "u": "()", "v": "...", "x": "i64", "y": "u64", "z": "!",
    "p": "_",
}  # fmt: skip
_SIGNED = frozenset("alnisx")
_UNSIGNED = frozenset("hmojty")
_BASE62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# ASCII digits only: str.isdigit() also takes "²" and friends, which int() refuses.
DIGITS = frozenset("0123456789")
MAX_DEPTH = 300  # nested paths and types (back-references included) before giving up
_LEGACY_HASH = re.compile(r"^h[0-9a-f]{16}$")
_LEGACY_ESCAPES = {
    "SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ",",
}  # fmt: skip


_Reader = Callable[[], str]


class _Unreadable(Exception):
    """A name this parser cannot read (malformed, or a form it does not know)."""


def demangle_rust(name: str) -> str | None:
    """rustfilt's form of a Rust symbol name, or None when it is not one this
    reads (the caller keeps the name)."""
    try:
        if name.startswith("_R"):
            return _V0(name[2:].split(".", 1)[0]).symbol()
        if name.startswith(("_ZN", "__ZN")):
            return _legacy(name[name.index("ZN") + 2 :])
    except (_Unreadable, RecursionError):
        return None
    return None


def _legacy(text: str) -> str | None:
    """``<len><ident>...E[suffix]`` with the trailing ``h<hash>`` segment."""
    segments: list[str] = []
    at = 0
    while at < len(text) and text[at] != "E":
        digits = at
        while at < len(text) and text[at] in DIGITS:
            at += 1
        if digits == at:
            return None
        length = int(text[digits:at])
        segment = text[at : at + length]
        if len(segment) != length:
            return None
        segments.append(segment)
        at += length
    if at >= len(text) or len(segments) < 2 or not _LEGACY_HASH.match(segments[-1]):
        return None
    return "::".join(_legacy_segment(s) for s in segments[:-1])


def _legacy_segment(segment: str) -> str:
    if segment.startswith("_$"):
        segment = segment[1:]
    out: list[str] = []
    at = 0
    while at < len(segment):
        if segment.startswith("..", at):
            out.append("::")
            at += 2
        elif segment[at] == "$":
            end = segment.find("$", at + 1)
            if end < 0:
                raise _Unreadable(segment)
            out.append(_legacy_escape(segment[at + 1 : end]))
            at = end + 1
        else:
            out.append(segment[at])
            at += 1
    return "".join(out)


def _legacy_escape(code: str) -> str:
    if code in _LEGACY_ESCAPES:
        return _LEGACY_ESCAPES[code]
    if code.startswith("u") and len(code) > 1:
        try:
            return chr(int(code[1:], 16))
        except ValueError:
            pass
    raise _Unreadable(code)


class _V0:
    """One v0 name (after ``_R``, without a suffix), printed as it is parsed."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.bound = 0  # lifetimes bound by the binders around the current point
        self.depth = 0

    # -- reading -------------------------------------------------------------
    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def next(self) -> str:
        char = self.peek()
        if not char:
            raise _Unreadable("cut short")
        self.at += 1
        return char

    def eat(self, char: str) -> bool:
        if self.peek() == char:
            self.at += 1
            return True
        return False

    def base62(self) -> int:
        """``_`` is 0; digits then ``_`` are their value plus one."""
        if self.eat("_"):
            return 0
        value = 0
        while not self.eat("_"):
            digit = _BASE62.find(self.next())
            if digit < 0:
                raise _Unreadable("base-62")
            value = value * 62 + digit
        return value + 1

    def opt_base62(self, tag: str) -> int:
        return self.base62() + 1 if self.eat(tag) else 0

    def decimal(self) -> int:
        """``0``, or digits not starting with 0."""
        if self.eat("0"):
            return 0
        start = self.at
        while self.peek() in DIGITS:
            self.at += 1
        if start == self.at:
            raise _Unreadable("decimal")
        return int(self.text[start : self.at])

    def identifier(self) -> tuple[int, str]:
        """(disambiguator, name)."""
        disambiguator = self.opt_base62("s")
        return disambiguator, self.undisambiguated()

    def undisambiguated(self) -> str:
        punycode = self.eat("u")
        length = self.decimal()
        self.eat("_")
        raw = self.text[self.at : self.at + length]
        if len(raw) != length:
            raise _Unreadable("identifier")
        self.at += length
        return _punycode(raw) if punycode else raw

    def backref(self, read: _Reader) -> str:
        """Read what the back-reference points at with ``read``, then come back."""
        start = self.at - 1
        target = self.base62()
        if target >= start:
            raise _Unreadable("back-reference forward")
        saved, self.at = self.at, target
        try:
            return read()
        finally:
            self.at = saved

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Unreadable("too deep")

    # -- grammar ---------------------------------------------------------------
    def symbol(self) -> str:
        if self.peek() in DIGITS:
            raise _Unreadable("encoding version")
        shown = self.path(True)
        if self.at < len(self.text):
            self.path(False)  # the instantiating crate: not shown
        if self.at != len(self.text):
            raise _Unreadable("trailing bytes")
        return shown

    def path(self, in_value: bool) -> str:
        self.enter()
        try:
            return self._path(in_value)
        finally:
            self.depth -= 1

    def _path(self, in_value: bool) -> str:
        tag = self.next()
        if tag == "C":
            return self.identifier()[1]
        if tag == "N":
            namespace = self.next()
            inner = self.path(in_value)
            disambiguator, name = self.identifier()
            if namespace.isupper():
                kind = {"C": "closure", "S": "shim"}.get(namespace, namespace)
                named = f":{name}" if name else ""
                return f"{inner}::{{{kind}{named}#{disambiguator}}}"
            if not namespace.islower():
                raise _Unreadable("namespace")
            return f"{inner}::{name}" if name else inner
        if tag in "MXY":
            if tag != "Y":
                self.opt_base62("s")
                self.path(False)  # the impl's own path: not shown
            shown = self.type()
            if tag == "M":
                return f"<{shown}>"
            return f"<{shown} as {self.path(False)}>"
        if tag == "I":
            inner = self.path(in_value)
            return f"{inner}{'::' if in_value else ''}<{self.generic_args()}>"
        if tag == "B":
            return self.backref(lambda: self.path(in_value))
        raise _Unreadable(f"path tag {tag!r}")

    def generic_args(self) -> str:
        args = []
        while not self.eat("E"):
            args.append(self.generic_arg())
        return ", ".join(args)

    def generic_arg(self) -> str:
        if self.eat("L"):
            return self.lifetime(self.base62())
        if self.eat("K"):
            return self.const()
        return self.type()

    def lifetime(self, index: int) -> str:
        if index == 0:
            return "'_"
        depth = self.bound - index
        if depth < 0:
            raise _Unreadable("lifetime")
        return f"'{chr(ord('a') + depth)}" if depth < 26 else f"'_{depth}"

    def type(self) -> str:
        self.enter()
        try:
            return self._type()
        finally:
            self.depth -= 1

    def _type(self) -> str:
        tag = self.peek()
        if tag in _BASIC:
            self.at += 1
            return _BASIC[tag]
        self.at += 1
        if tag == "A":
            element = self.type()
            return f"[{element}; {self.const()}]"
        if tag == "S":
            return f"[{self.type()}]"
        if tag == "T":
            items = []
            while not self.eat("E"):
                items.append(self.type())
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if tag in "RQ":
            shown = "&" if tag == "R" else "&mut "
            if self.eat("L"):
                index = self.base62()
                if index:
                    shown = f"&{self.lifetime(index)} " + ("mut " if tag == "Q" else "")
            return shown + self.type()
        if tag in "PO":
            return ("*const " if tag == "P" else "*mut ") + self.type()
        if tag == "F":
            return self.in_binder(self.fn_sig)
        if tag == "D":
            bounds = "dyn " + self.in_binder(self.dyn_bounds)
            if not self.eat("L"):
                raise _Unreadable("dyn lifetime")
            index = self.base62()
            return f"{bounds} + {self.lifetime(index)}" if index else bounds
        if tag == "B":
            return self.backref(self.type)
        self.at -= 1
        return self.path(False)

    def in_binder(self, read: _Reader) -> str:
        count = self.opt_base62("G")
        names = []
        for _ in range(count):
            self.bound += 1
            names.append(self.lifetime(1))
        try:
            shown = read()
        finally:
            self.bound -= count
        return f"for<{', '.join(names)}> {shown}" if names else shown

    def fn_sig(self) -> str:
        prefix = "unsafe " if self.eat("U") else ""
        if self.eat("K"):
            abi = "C" if self.eat("C") else self.undisambiguated().replace("_", "-")
            prefix += f'extern "{abi}" '
        params = []
        while not self.eat("E"):
            params.append(self.type())
        result = self.type()
        arrow = "" if result == "()" else f" -> {result}"
        return f"{prefix}fn({', '.join(params)}){arrow}"

    def dyn_bounds(self) -> str:
        traits = []
        while not self.eat("E"):
            traits.append(self.dyn_trait())
        return " + ".join(traits)

    def dyn_trait(self) -> str:
        shown, open_args = self.path_open_generics()
        while self.eat("p"):
            shown += ", " if open_args else "<"
            open_args = True
            name = self.undisambiguated()
            shown += f"{name} = {self.type()}"
        return shown + ">" if open_args else shown

    def path_open_generics(self) -> tuple[str, bool]:
        """A trait's path, its generic arguments' ``>`` left off (True) so
        associated type bindings can follow them."""
        if self.eat("B"):
            start = self.at - 1
            target = self.base62()
            if target >= start:
                raise _Unreadable("back-reference forward")
            saved, self.at = self.at, target
            try:
                return self.path_open_generics()
            finally:
                self.at = saved
        if self.eat("I"):
            inner = self.path(False)
            return f"{inner}<{self.generic_args()}", True
        return self.path(False), False

    def const(self) -> str:
        tag = self.next()
        if tag == "p":
            return "_"
        if tag == "B":
            return self.backref(self.const)
        negative = tag in _SIGNED and self.eat("n")
        start = self.at
        while self.peek() != "_":
            if self.next() not in "0123456789abcdef":
                raise _Unreadable("const digits")
        digits = self.text[start : self.at]
        self.at += 1
        value = int(digits, 16) if digits else 0
        if tag in _UNSIGNED or tag in _SIGNED:
            return f"-{value}" if negative else str(value)
        if tag == "b" and value in (0, 1):
            return "true" if value else "false"
        if tag == "c" and value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF:
            return repr(chr(value)) if chr(value) != "'" else "'\\''"
        raise _Unreadable(f"const of type {tag!r}")


def _punycode(raw: str) -> str:
    """RFC 3492 decoding, with v0's ``_`` in place of ``-`` as the delimiter."""
    basic, _, encoded = raw.rpartition("_")
    try:
        return (basic + "-" + encoded).encode("ascii").decode("punycode")
    except (UnicodeError, ValueError):
        raise _Unreadable("punycode") from None
