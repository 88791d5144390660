"""Names of CPython code objects in a live process, for the kernel's Python frames.

Owns :class:`CodeNames` (one process): (code object address, instruction
index, identity) -> a frame named ``QUALNAME (FILE:LINE)``, :func:`code_ident`
and :func:`line_of` (the ``co_linetable`` decoder: the format of 3.11 to
3.14, CPython's Objects/locations.md). The kernel names no code object: it
records each frame's code address and the object's identity at the sample
(bpf/python.bpf.c: a mix of co_firstlineno, the co_filename and co_qualname
pointers and co_qualname's cached hash), and user space reads the object
from /proc/PID/mem up to a drain later, when it may have been freed and its
address reused: a churn of generated functions reused one address for
1,158 of 1,158 functions, all with the same first line, their names' and
files' strings at two alternating addresses
(tests/workloads/py_churn.py). So an entry is cached under its address and
used only for a frame of the same identity; a frame whose identity is no
longer at its address is unnamed (the code object was freed), never named
after the object now there. The identity's limit: a new object with the
same first line and the same qualified-name string (an interned name shared
by both), whose file-name string took the old one's address, looks the
same; functions all named ``gen`` from files ``<gen-N>``, freed at once,
showed 19 file names for 1,788 samples (tests/workloads/py_churn.py with
one name). What cannot be read is a value too: an unnamed frame with the
code address and a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

from bpftop.symbols.frame import Frame, Unresolved
from bpftop.symbols.python.layout import LAYOUT_311, PythonLayout

# Code object and string offsets come from the interpreter's PythonLayout
# (3.11's checked against PyCode_Type by python_runtime).
OB_TYPE = 8
STR_HASH = 24  # PyASCIIObject.hash: -1 until computed (3.11 to 3.14)
IDENT_MUL, MASK64 = 0x9E3779B97F4A7C15, (1 << 64) - 1  # python.bpf.c's PY_IDENT_MUL
MAX_STRING, MAX_LINETABLE = 4096, 1 << 20
UNNAMED_MODULE = "[python]"


def python_label(qualname: str, filename: str, line: int) -> str:
    """How a Python frame is named everywhere: ``QUALNAME (FILE:LINE)``, py-spy's form."""
    return f"{qualname} ({filename}:{line})"


def python_qualname(label: str, module: str, line: int) -> str | None:
    """The QUALNAME of a ``python_label`` of code from ``module`` at ``line``; else None."""
    suffix = f" ({module}:{line})"
    return label[: -len(suffix)] if module and line and label.endswith(suffix) else None


def is_python_frame(label: str, module: str) -> bool:
    """Whether a frame's label and module are those of a frame ``CodeNames`` made:
    ``QUALNAME (FILE:LINE)`` of code from FILE (or ``function_label``'s
    ``QUALNAME (FILE)``), or a code object it could not read."""
    if module == UNNAMED_MODULE:
        return True
    return label.endswith(")") and (f" ({module}:" in label or label.endswith(f" ({module})"))


def function_label(label: str, module: str) -> str:
    """A Python frame's label without its line, ``QUALNAME (FILE)`` (py-spy top's
    grouping by function); any other label as it is."""
    cut = label.rfind(f" ({module}:")
    return f"{label[:cut]} ({module})" if cut > 0 and label.endswith(")") else label


@dataclass(frozen=True, slots=True)
class _Code:
    qualname: str
    filename: str
    firstlineno: int
    linetable: bytes
    ident: int


def code_ident(firstlineno: int, filename: int, qualname: int, qualname_hash: int) -> int:
    """The identity python.bpf.c's python_ident() records (the same mix; the
    hash as the unsigned 64 bits read)."""
    ident = firstlineno & 0xFFFFFFFF
    for value in (filename, qualname, qualname_hash):
        ident = ((ident ^ value) * IDENT_MUL) & MASK64
    return ident or 1


class CodeNames:
    """Code objects of process ``pid`` (``code_type``: its &PyCode_Type;
    ``layout``: its interpreter's)."""

    def __init__(self, pid: int, code_type: int, layout: PythonLayout = LAYOUT_311) -> None:
        self._code_type = code_type
        self._layout = layout
        self._cache: dict[int, _Code] = {}
        self._path = f"/proc/{pid}/mem"
        self._mem: BinaryIO | None = None  # kept open: opening it was half a naming's cost

    def close(self) -> None:
        if self._mem is not None:
            self._mem.close()
            self._mem = None

    def frame(self, code_addr: int, instr_index: int, ident: int) -> Frame:
        """The frame of ``code_addr`` if the object there is still the one of
        identity ``ident`` the kernel saw."""
        code = self._code(code_addr, ident)
        if not isinstance(code, _Code):
            return Frame(None, UNNAMED_MODULE, code_addr, reason=code)
        line = code.firstlineno
        if instr_index >= 0:
            line = line_of(code.linetable, code.firstlineno, instr_index) or line
        name = python_label(code.qualname, code.filename, line)
        offset = 2 * max(0, instr_index)
        return Frame(
            name, code.filename, offset, file=code.filename, line=line, start_line=code.firstlineno
        )

    def _code(self, addr: int, ident: int) -> _Code | Unresolved:
        cached = self._cache.get(addr)
        if cached is not None and cached.ident == ident:
            return cached
        if not ident:  # the kernel could not read the object: nothing to check against
            return Unresolved.FILE_UNREADABLE
        try:
            if self._mem is None:
                self._mem = open(self._path, "rb", buffering=0)  # noqa: SIM115 - kept open
            code = _read_code(self._mem, addr, self._code_type, self._layout)
        except OSError:
            code = None
        if code is None:
            self._cache.pop(addr, None)
            return Unresolved.FILE_UNREADABLE
        self._cache[addr] = code  # the object there now: the next samples' likely
        return code if code.ident == ident else Unresolved.CODE_FREED


def _read_code(mem: object, addr: int, code_type: int, layout: PythonLayout) -> _Code | None:
    head = read_at(mem, addr, layout.code_size)
    if head is None or u64(head, OB_TYPE) != code_type:
        return None
    at = layout.code_firstlineno
    firstlineno = int.from_bytes(head[at : at + 4], "little", signed=True)
    filename_at, qualname_at = u64(head, layout.code_filename), u64(head, layout.code_qualname)
    qualname_hash = read_at(mem, qualname_at + layout.str_hash, 8) if qualname_at else None
    filename = read_string(mem, filename_at, layout)
    qualname = read_string(mem, qualname_at, layout)
    table = _bytes(mem, u64(head, layout.code_linetable), layout)
    if filename is None or qualname is None or table is None or qualname_hash is None:
        return None
    ident = code_ident(firstlineno, filename_at, qualname_at, u64(qualname_hash, 0))
    return _Code(qualname, filename, firstlineno, table, ident)


def read_at(mem: object, addr: int, size: int) -> bytes | None:
    try:
        mem.seek(addr)  # type: ignore[attr-defined]
        data: bytes = mem.read(size)  # type: ignore[attr-defined]
    except (OSError, ValueError, OverflowError):
        return None
    return data if len(data) == size else None


def u64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 8], "little")


def read_string(mem: object, addr: int, layout: PythonLayout = LAYOUT_311) -> str | None:
    """A compact str object's text (the state bits' places are the same 3.11 to 3.14)."""
    head = read_at(mem, addr, layout.str_ascii_data) if addr else None
    if head is None:
        return None
    length, state = (
        u64(head, layout.str_length),
        int.from_bytes(head[layout.str_state : layout.str_state + 4], "little"),
    )
    kind, compact, ascii_ = (state >> 2) & 7, (state >> 5) & 1, (state >> 6) & 1
    if not compact or length > MAX_STRING or kind not in (1, 2, 4):
        return None
    data_at = layout.str_ascii_data if ascii_ else layout.str_compact_data
    data = read_at(mem, addr + data_at, length * kind)
    if data is None:
        return None
    codec = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind]
    return data.decode(codec, errors="replace")


def _bytes(mem: object, addr: int, layout: PythonLayout) -> bytes | None:
    head = read_at(mem, addr, layout.bytes_data) if addr else None
    size = u64(head, layout.bytes_size) if head is not None else MAX_LINETABLE + 1
    if size > MAX_LINETABLE:
        return None
    return read_at(mem, addr + layout.bytes_data, size)


def line_of(table: bytes, firstlineno: int, instr_index: int) -> int | None:
    """The line of code unit ``instr_index`` per the 3.11 location table
    (None: no location, or past the table)."""
    line, unit, at = firstlineno, 0, 0
    while at < len(table):
        first = table[at]
        code, length = (first >> 3) & 15, (first & 7) + 1
        at += 1
        if code == 15:
            delta, has_line = 0, False
        elif code == 14:
            delta, at = _signed_varint(table, at)
            for _ in range(3):
                _, at = _varint(table, at)
            has_line = True
        elif code == 13:
            delta, at = _signed_varint(table, at)
            has_line = True
        elif code >= 10:
            delta, at, has_line = code - 10, at + 2, True
        else:
            delta, at, has_line = 0, at + 1, True
        line += delta
        if unit <= instr_index < unit + length:
            return line if has_line else None
        unit += length
    return None


def _varint(table: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while at < len(table):
        byte = table[at]
        at += 1
        value |= (byte & 63) << shift
        shift += 6
        if not byte & 64:
            break
    return value, at


def _signed_varint(table: bytes, at: int) -> tuple[int, int]:
    value, at = _varint(table, at)
    return (-(value >> 1) if value & 1 else value >> 1), at
