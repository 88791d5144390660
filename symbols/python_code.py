"""Names of CPython 3.11 code objects in a live process, for the kernel's Python frames.

Owns :class:`CodeNames` (one process): (code object address, instruction
index) -> a frame named ``QUALNAME (FILE:LINE)``, and :func:`line_of` (the
3.11 ``co_linetable`` decoder: CPython's Objects/locations.md). Code objects
are read from /proc/PID/mem once per address and checked again (type pointer
and first line) before a cached entry is trusted: a freed code object's
address can be reused. What cannot be read is a value: an unnamed frame
with the code address and a reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from bpftop.symbols.frame import Frame, Unresolved

# PyCodeObject (3.11, x86-64; checked against PyCode_Type by python_runtime).
OB_TYPE, FIRSTLINENO, FILENAME, QUALNAME, LINETABLE = 8, 72, 112, 128, 136
# PyUnicodeObject: length, state; data of a compact ASCII / non-ASCII string.
STR_LENGTH, STR_STATE, ASCII_DATA, COMPACT_DATA = 16, 32, 48, 72
BYTES_SIZE, BYTES_DATA = 16, 32
MAX_STRING, MAX_LINETABLE = 4096, 1 << 20
UNNAMED_MODULE = "[python]"


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


class CodeNames:
    """Code objects of process ``pid`` (``code_type``: its &PyCode_Type)."""

    def __init__(self, pid: int, code_type: int) -> None:
        self._code_type = code_type
        self._cache: dict[int, _Code] = {}
        self._path = f"/proc/{pid}/mem"

    def frame(self, code_addr: int, instr_index: int) -> Frame:
        code = self._code(code_addr)
        if code is None:
            return Frame(None, UNNAMED_MODULE, code_addr, reason=Unresolved.FILE_UNREADABLE)
        line = code.firstlineno
        if instr_index >= 0:
            line = line_of(code.linetable, code.firstlineno, instr_index) or line
        name = f"{code.qualname} ({code.filename}:{line})"
        return Frame(name, code.filename, 2 * max(0, instr_index), file=code.filename, line=line)

    def _code(self, addr: int) -> _Code | None:
        try:
            with open(self._path, "rb", buffering=0) as mem:
                head = _read(mem, addr, FIRSTLINENO + 4)
                if head is None or _u64(head, OB_TYPE) != self._code_type:
                    self._cache.pop(addr, None)
                    return None
                firstlineno = int.from_bytes(head[FIRSTLINENO:], "little", signed=True)
                cached = self._cache.get(addr)
                if cached is not None and cached.firstlineno == firstlineno:
                    return cached
                code = _read_code(mem, addr, firstlineno)
        except OSError:
            return None
        if code is not None:
            self._cache[addr] = code
        return code


def _read_code(mem: object, addr: int, firstlineno: int) -> _Code | None:
    fields = _read(mem, addr + FILENAME, LINETABLE + 8 - FILENAME)
    if fields is None:
        return None
    filename = _string(mem, _u64(fields, 0))
    qualname = _string(mem, _u64(fields, QUALNAME - FILENAME))
    table = _bytes(mem, _u64(fields, LINETABLE - FILENAME))
    if filename is None or qualname is None or table is None:
        return None
    return _Code(qualname, filename, firstlineno, table)


def _read(mem: object, addr: int, size: int) -> bytes | None:
    try:
        mem.seek(addr)  # type: ignore[attr-defined]
        data: bytes = mem.read(size)  # type: ignore[attr-defined]
    except (OSError, ValueError, OverflowError):
        return None
    return data if len(data) == size else None


def _u64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 8], "little")


def _string(mem: object, addr: int) -> str | None:
    head = _read(mem, addr, ASCII_DATA) if addr else None
    if head is None:
        return None
    length, state = (
        _u64(head, STR_LENGTH),
        int.from_bytes(head[STR_STATE : STR_STATE + 4], "little"),
    )
    kind, compact, ascii_ = (state >> 2) & 7, (state >> 5) & 1, (state >> 6) & 1
    if not compact or length > MAX_STRING or kind not in (1, 2, 4):
        return None
    data = _read(mem, addr + (ASCII_DATA if ascii_ else COMPACT_DATA), length * kind)
    if data is None:
        return None
    codec = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind]
    return data.decode(codec, errors="replace")


def _bytes(mem: object, addr: int) -> bytes | None:
    head = _read(mem, addr, BYTES_DATA) if addr else None
    if head is None or _u64(head, BYTES_SIZE) > MAX_LINETABLE:
        return None
    return _read(mem, addr + BYTES_DATA, _u64(head, BYTES_SIZE))


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
