"""Finding a process's CPython interpreter, for the in-kernel Python frame walker.

Owns :func:`find_python`: from /proc/PID/maps, the interpreter binary or
libpython mapped by a process; from its ELF symbols and load address,
``_PyRuntime`` (hence ``autoTSSkey``, what bpf/python.bpf.c needs per
process); from its memory, ``Py_Version``; and a self-check of the layout
the walker and the code-object reader assume (``PyCode_Type``'s size and
member offsets). The answer is a value: :class:`PythonRuntime`,
:class:`PythonRefused` (a Python bpftop cannot verify: one line naming what
was found; native stacks go on) or None (not Python). Results are cached by
file identity.
"""

from __future__ import annotations

import functools
import re
import struct
from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from bpftop.symbols.elf_cache import FileId
from bpftop.symbols.maps import MapEntry, parse_line

PROC_ROOT = "/proc"
_INTERPRETER = re.compile(r"(?:^|/)(?:python3\.\d+[a-z]*|libpython3\.\d+[a-z]*\.so[.\d]*)$")
SYMBOLS = ("_PyRuntime", "Py_Version", "PyCode_Type", "_PyEval_EvalFrameDefault")
# The types python_objects checks every object it reads against (all in .dynsym).
TYPE_SYMBOLS = ("PyDict_Type", "PyUnicode_Type", "PyLong_Type", "PyModule_Type", "PyType_Type")
# CPython 3.11 on x86-64 (DESIGN §5d), what the walker and the reader rely on.
AUTO_TSS_KEY = 592  # _PyRuntime.gilstate.autoTSSkey
CODE_BASICSIZE = 184  # sizeof(PyCodeObject) without bytecode: where it starts
CODE_MEMBERS = {
    "co_firstlineno": 72,
    "co_filename": 112,
    "co_name": 120,
    "co_qualname": 128,
    "co_linetable": 136,
}
TP_BASICSIZE, TP_MEMBERS = 32, 240  # PyTypeObject fields (3.11)
MEMBER_DEF = struct.Struct("<QixxxxqixxxxQ")  # PyMemberDef: name, type, offset, flags, doc
MAX_MEMBERS = 64


@dataclass(frozen=True, slots=True)
class ObjectTypes:
    """Addresses of the builtin types (``&PyDict_Type``...) in the process; 0: not found."""

    dict_type: int = 0
    str_type: int = 0
    int_type: int = 0
    module_type: int = 0
    type_type: int = 0


@dataclass(frozen=True, slots=True)
class PythonRuntime:
    """A verified CPython 3.11: where its runtime is, in the process's addresses."""

    pid: int
    path: str
    version: str
    runtime_addr: int
    load_bias: int
    code_type: int = 0  # &PyCode_Type
    eval_range: tuple[int, int] = (0, 0)  # [start, end) of _PyEval_EvalFrameDefault (hot part)
    types: ObjectTypes = ObjectTypes()

    @property
    def tss_key_addr(self) -> int:
        return self.runtime_addr + AUTO_TSS_KEY


@dataclass(frozen=True, slots=True)
class PythonRefused:
    """A Python whose layout bpftop cannot verify: ``message`` says which."""

    pid: int
    path: str
    version: str
    message: str


def find_python(pid: int, proc_root: str = PROC_ROOT) -> PythonRuntime | PythonRefused | None:
    """The interpreter of ``pid``; None when it maps none (or is gone)."""
    entries = _interpreter_mappings(pid, proc_root)
    if not entries:
        return None
    first = entries[0]
    found = _symbols_of(pid, first, proc_root)
    if found is None:
        return None
    symbols, bias = found
    memory = f"{proc_root}/{pid}/mem"
    try:
        with open(memory, "rb", buffering=0) as mem:
            return _check(pid, first.path, symbols, bias, mem)
    except OSError:
        return None


def _interpreter_mappings(pid: int, proc_root: str) -> list[MapEntry]:
    try:
        with open(f"{proc_root}/{pid}/maps") as stream:
            lines = stream.read().splitlines()
    except OSError:
        return []
    entries = [e for e in map(parse_line, lines) if e is not None and _INTERPRETER.search(e.path)]
    libraries = [e for e in entries if "libpython" in e.path]
    chosen = libraries or entries  # a python binary with libpython beside it: the library
    return sorted((e for e in chosen if e.path == chosen[0].path), key=lambda e: e.start)


def _symbols_of(pid: int, entry: MapEntry, proc_root: str) -> tuple[dict[str, int], int] | None:
    """The interpreter's symbols (ELF addresses) and its load bias."""
    path = f"{proc_root}/{pid}/map_files/{entry.range_name}"
    file_id = FileId.of_path(path)
    if file_id is None:
        return None
    read = _read_elf(path, file_id)
    if read is None:
        return None
    symbols, segments = read
    for p_offset, p_vaddr, p_filesz in segments:
        if p_offset <= entry.offset < p_offset + max(p_filesz, 1):
            return symbols, entry.start - (p_vaddr + entry.offset - p_offset)
    return None


@functools.lru_cache(maxsize=32)
def _read_elf(
    path: str, file_id: FileId
) -> tuple[dict[str, int], tuple[tuple[int, int, int], ...]] | None:
    try:
        with open(path, "rb") as stream:
            elf = ELFFile(stream)
            segments = tuple(
                (s["p_offset"], s["p_vaddr"], s["p_filesz"])
                for s in elf.iter_segments()
                if s["p_type"] == "PT_LOAD"
            )
            symbols: dict[str, int] = {}
            sizes: dict[str, int] = {}
            for name in (".dynsym", ".symtab"):
                section = elf.get_section_by_name(name)
                if not isinstance(section, SymbolTableSection):
                    continue
                for symbol in SYMBOLS + TYPE_SYMBOLS:
                    found = section.get_symbol_by_name(symbol)
                    if found and found[0]["st_value"]:
                        symbols.setdefault(symbol, found[0]["st_value"])
                        sizes.setdefault(symbol, found[0]["st_size"])
                if len(symbols) == len(SYMBOLS) + len(TYPE_SYMBOLS):
                    break  # .dynsym had them all: the larger .symtab is not read
    except (OSError, ELFError, ValueError):
        return None
    if "_PyRuntime" not in symbols:
        return None
    if "_PyEval_EvalFrameDefault" in symbols:  # its end, as a pseudo-symbol
        symbols["_PyEval_EvalFrameDefault.end"] = (
            symbols["_PyEval_EvalFrameDefault"] + sizes["_PyEval_EvalFrameDefault"]
        )
    return symbols, segments


def _check(
    pid: int, path: str, symbols: dict[str, int], bias: int, mem: object
) -> PythonRuntime | PythonRefused:
    reader = _Memory(mem)
    version = "unknown version"
    if "Py_Version" in symbols:
        hexversion = reader.u32(symbols["Py_Version"] + bias)
        if hexversion is not None:
            version = _version_text(hexversion)
    if not version.startswith("3.11."):
        return _refused(pid, path, version, "only CPython 3.11 is supported")
    problem = _code_layout_problem(reader, symbols.get("PyCode_Type"), bias)
    if problem:
        return _refused(pid, path, version, problem)
    eval_range = (
        symbols.get("_PyEval_EvalFrameDefault", -bias) + bias,
        symbols.get("_PyEval_EvalFrameDefault.end", -bias) + bias,
    )
    code_type = symbols["PyCode_Type"] + bias
    types = ObjectTypes(*(symbols[name] + bias if name in symbols else 0 for name in TYPE_SYMBOLS))
    return PythonRuntime(
        pid, path, version, symbols["_PyRuntime"] + bias, bias, code_type, eval_range, types
    )


def _refused(pid: int, path: str, version: str, why: str) -> PythonRefused:
    message = (
        f"process {pid} runs Python {version} ({path}): no Python frames, {why};"
        " native stacks go on"
    )
    return PythonRefused(pid, path, version, message)


def _version_text(hexversion: int) -> str:
    major, minor, micro = hexversion >> 24, (hexversion >> 16) & 0xFF, (hexversion >> 8) & 0xFF
    return f"{major}.{minor}.{micro}"


def _code_layout_problem(reader: _Memory, code_type: int | None, bias: int) -> str:
    """ "" when PyCode_Type says code objects are laid out as the reader expects."""
    if code_type is None:
        return "PyCode_Type not found to check the code object layout"
    basicsize = reader.u64(code_type + bias + TP_BASICSIZE)
    if basicsize != CODE_BASICSIZE:
        return f"code objects are {basicsize} bytes, expected {CODE_BASICSIZE}"
    members = reader.u64(code_type + bias + TP_MEMBERS)
    table = reader.read(members, MEMBER_DEF.size * MAX_MEMBERS) if members else None
    if table is None:
        return "PyCode_Type's member table cannot be read"
    offsets: dict[str, int] = {}
    for name_at, _type, offset, _flags, _doc in MEMBER_DEF.iter_unpack(table):
        if not name_at:
            break
        name = reader.cstring(name_at)
        if name in CODE_MEMBERS:
            offsets[name] = offset
    wrong = [n for n, want in CODE_MEMBERS.items() if offsets.get(n) != want]
    return f"code object members at unexpected offsets: {', '.join(wrong)}" if wrong else ""


class _Memory:
    """Reads from /proc/PID/mem; None for what cannot be read."""

    def __init__(self, mem: object) -> None:
        self._mem = mem

    def read(self, addr: int, size: int) -> bytes | None:
        try:
            self._mem.seek(addr)  # type: ignore[attr-defined]
            data: bytes = self._mem.read(size)  # type: ignore[attr-defined]
        except (OSError, ValueError, OverflowError):
            return None
        return data if len(data) == size else None

    def u32(self, addr: int) -> int | None:
        data = self.read(addr, 4)
        return None if data is None else int.from_bytes(data, "little")

    def u64(self, addr: int) -> int | None:
        data = self.read(addr, 8)
        return None if data is None else int.from_bytes(data, "little")

    def cstring(self, addr: int, limit: int = 64) -> str:
        data = self.read(addr, limit) or b""
        return data.split(b"\0", 1)[0].decode(errors="replace")
