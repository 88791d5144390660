"""Finding a process's CPython interpreter, for the in-kernel Python frame walker.

Owns :func:`find_python`: from /proc/PID/maps, the interpreter binary or
libpython mapped by a process (read through /proc/PID/map_files, so a
target in another root or mount namespace is read as it sees its files);
from its ELF symbols and load address, ``_PyRuntime``; from its memory,
``Py_Version`` and the layout (:mod:`bpftop.symbols.python.layout`): 3.11's
and 3.12's own tables, self-checked against ``PyCode_Type``'s size and
member offsets; 3.13 and 3.14's from the target's ``_Py_DebugOffsets``,
checked the same way. Where the thread's own state is: the gilstate TSS key
(``autoTSSkey``: 3.11's at a known offset, 3.12+'s decoded from
``PyGILState_GetThisThreadState``), else 3.13+'s thread-local
``_Py_tss_tstate`` (set only while the thread holds the GIL). The answer is
a value: :class:`PythonRuntime`, :class:`PythonRefused` (a Python bpftop
cannot verify: one line naming what was found; native stacks go on) or None
(not Python). Results are cached by file identity.
"""

from __future__ import annotations

import functools
import re
import struct
from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from bpftop.symbols.elf.load_segments import LoadSegment, mapping_bias
from bpftop.symbols.proc.maps import FileId, MapEntry, parse_line
from bpftop.symbols.python.eval_loop import eval_ranges
from bpftop.symbols.python.layout import (
    LAYOUT_311,
    LAYOUT_312,
    TABLE_BYTES,
    PythonLayout,
    parse_debug_offsets,
)
from bpftop.symbols.python.tls import TlsAccess, tls_access, tss_key_offset

PROC_ROOT = "/proc"
_INTERPRETER = re.compile(r"(?:^|/)(?:python3\.\d+[a-z]*|libpython3\.\d+[a-z]*\.so[.\d]*)$")
SYMBOLS = (
    "_PyRuntime",
    "Py_Version",
    "PyCode_Type",
    "_PyEval_EvalFrameDefault",
    "PyThreadState_GetUnchecked",  # 3.13+: reads _Py_tss_tstate, decoded for its TLS offset
    "PyGILState_GetThisThreadState",  # 3.13+: reads autoTSSkey, decoded for its offset
)
VERSION_SYMBOLS = (
    "PyThreadState_GetUnchecked",
    "PyGILState_GetThisThreadState",
)  # not looked for in .symtab when missing
EVAL_PART = "_PyEval_EvalFrameDefault.part"  # pseudo-symbols: eval_ranges' parts
# The types python_objects checks every object it reads against (all in .dynsym).
TYPE_SYMBOLS = ("PyDict_Type", "PyUnicode_Type", "PyLong_Type", "PyModule_Type", "PyType_Type")
# CPython 3.11 on x86-64: the gilstate TSS key the walker finds the thread's state by.
AUTO_TSS_KEY = 592  # _PyRuntime.gilstate.autoTSSkey
TP_BASICSIZE, TP_MEMBERS = 32, 240  # PyTypeObject fields (3.11 to 3.14)
SUPPORTED = "CPython 3.11 to 3.14"
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
    """A verified CPython: where its runtime is, in the process's addresses,
    and its layout. ``tls``: 3.13+'s thread-local thread state (None: 3.11's
    TSS key); ``gil_holder`` / ``gil_locked``: addresses of the GIL's holder
    pointer and locked flag (0: none)."""

    pid: int
    path: str
    version: str
    runtime_addr: int
    load_bias: int
    code_type: int = 0  # &PyCode_Type
    eval_range: tuple[int, int] = (0, 0)  # [start, end) of _PyEval_EvalFrameDefault (hot part)
    types: ObjectTypes = ObjectTypes()
    layout: PythonLayout = LAYOUT_311
    tls: TlsAccess | None = None
    tss_key: int = 0  # &autoTSSkey when known (3.11: always; 3.13+: decoded)
    gil_holder: int = 0
    gil_locked: int = 0
    # The eval loop's parts (the hot one first, then its cold parts): a native
    # frame in one of them runs Python code.
    eval_ranges: tuple[tuple[int, int], ...] = ()

    def in_eval(self, addr: int) -> bool:
        return any(start <= addr < end for start, end in self.eval_ranges)

    @property
    def tss_key_addr(self) -> int:
        """&_PyRuntime's gilstate TSS key; 0 where the thread-local is used."""
        return self.tss_key


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
    bias = mapping_bias(segments, entry.start, entry.offset, entry.executable)
    return None if bias is None else (symbols, bias)


@functools.lru_cache(maxsize=32)
def _read_elf(path: str, file_id: FileId) -> tuple[dict[str, int], tuple[LoadSegment, ...]] | None:
    try:
        with open(path, "rb") as stream:
            elf = ELFFile(stream)
            segments = tuple(
                LoadSegment(s["p_offset"], s["p_filesz"], s["p_vaddr"], s["p_memsz"], s["p_flags"])
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
                if all(n in symbols for n in SYMBOLS + TYPE_SYMBOLS if n not in VERSION_SYMBOLS):
                    break  # .dynsym had them all: the larger .symtab is not read
            if "_PyEval_EvalFrameDefault" in symbols:  # its parts, as pseudo-symbols
                parts = eval_ranges(
                    elf, symbols["_PyEval_EvalFrameDefault"], sizes["_PyEval_EvalFrameDefault"]
                )
                for i, (start, end) in enumerate(parts):
                    symbols[f"{EVAL_PART}{i}"], symbols[f"{EVAL_PART}{i}.end"] = start, end
    except (OSError, ELFError, ValueError):
        return None
    if "_PyRuntime" not in symbols:
        return None
    return symbols, segments


def _check(
    pid: int, path: str, symbols: dict[str, int], bias: int, mem: object
) -> PythonRuntime | PythonRefused:
    reader = _Memory(mem)
    version, minor = "unknown version", 0
    if "Py_Version" in symbols:
        hexversion = reader.u32(symbols["Py_Version"] + bias)
        if hexversion is not None:
            version, minor = _version_text(hexversion), (hexversion >> 16) & 0xFF
            if hexversion >> 24 != 3:
                minor = 0
    runtime = symbols["_PyRuntime"] + bias
    tls: TlsAccess | None = None
    tss_key = 0
    if minor == 11:
        layout: PythonLayout | str = LAYOUT_311
        gil_holder, gil_locked = runtime + LAYOUT_311.gil_holder, 0
        tss_key = runtime + AUTO_TSS_KEY
    elif minor == 12:  # bpftop's table, checked below; the key's place decoded
        layout = LAYOUT_312
        tss_key = _tss_key(reader, symbols, bias, runtime)
        if not tss_key:
            return _refused(pid, path, version, "its gilstate key was not found")
        gil_holder, gil_locked = _gil_addresses(reader, runtime, layout)
    elif minor in (13, 14):
        layout = _debug_layout(reader, runtime, minor)
        tss_key = _tss_key(reader, symbols, bias, runtime)
        # The thread-local (the thread's state only while it holds the GIL):
        # used when the key is not found.
        found = _thread_state_tls(reader, symbols, bias)
        if isinstance(found, str) and not tss_key:
            return _refused(pid, path, version, found)
        tls = None if isinstance(found, str) else found
        gil_holder, gil_locked = _gil_addresses(reader, runtime, layout)
    else:
        return _refused(pid, path, version, f"only {SUPPORTED} are supported")
    if isinstance(layout, str):
        return _refused(pid, path, version, layout)
    problem = _code_layout_problem(reader, symbols.get("PyCode_Type"), bias, layout)
    if problem:
        return _refused(pid, path, version, problem)
    eval_ranges: list[tuple[int, int]] = []
    while f"{EVAL_PART}{len(eval_ranges)}" in symbols:
        part = f"{EVAL_PART}{len(eval_ranges)}"
        eval_ranges.append((symbols[part] + bias, symbols[f"{part}.end"] + bias))
    code_type = symbols["PyCode_Type"] + bias
    types = ObjectTypes(*(symbols[name] + bias if name in symbols else 0 for name in TYPE_SYMBOLS))
    return PythonRuntime(
        pid,
        path,
        version,
        runtime,
        bias,
        code_type,
        eval_ranges[0] if eval_ranges else (0, 0),
        types,
        layout,
        tls,
        tss_key,
        gil_holder,
        gil_locked,
        tuple(eval_ranges),
    )


def _debug_layout(reader: _Memory, runtime: int, minor: int) -> PythonLayout | str:
    """The layout from the target's _Py_DebugOffsets (the first field of _PyRuntime)."""
    data = reader.read(runtime, TABLE_BYTES)
    if data is None:
        return "_PyRuntime unreadable"
    return parse_debug_offsets(data, minor)


def _thread_state_tls(reader: _Memory, symbols: dict[str, int], bias: int) -> TlsAccess | str:
    """Where 3.13+ keeps each thread's own state: decoded from the exported
    accessor that reads ``_Py_tss_tstate`` (stripped binaries have no symbol
    for the variable itself)."""
    accessor = symbols.get("PyThreadState_GetUnchecked")
    if accessor is None:
        return "PyThreadState_GetUnchecked not found to locate the thread state"
    code = reader.read(accessor + bias, 32)
    if code is None:
        return "PyThreadState_GetUnchecked unreadable"
    found = tls_access(code, accessor + bias, reader.u64)
    return found if found is not None else "the thread state's TLS access is not one bpftop reads"


def _tss_key(reader: _Memory, symbols: dict[str, int], bias: int, runtime: int) -> int:
    """&_PyRuntime's gilstate TSS key (3.12+), decoded from
    PyGILState_GetThisThreadState and checked: initialized, a key glibc keeps
    in the thread's first block (below 32). 0 when not found so."""
    accessor = symbols.get("PyGILState_GetThisThreadState")
    code = reader.read(accessor + bias, 32) if accessor is not None else None
    if accessor is None or code is None:
        return 0
    offset = tss_key_offset(code, accessor + bias, runtime, reader.u64)
    key = reader.read(runtime + offset, 8) if offset is not None and 0 < offset < 1 << 20 else None
    if offset is None or key is None:
        return 0
    initialized, number = struct.unpack("<iI", key)
    return runtime + offset if initialized == 1 and number < 32 else 0


def _gil_addresses(reader: _Memory, runtime: int, layout: PythonLayout | str) -> tuple[int, int]:
    """The main interpreter's GIL holder and locked flag (0, 0: unreadable)."""
    if isinstance(layout, str) or not layout.gil_in_interp:
        return 0, 0
    interp = reader.u64(runtime + layout.interpreters_head)
    if not interp:
        return 0, 0
    return interp + layout.gil_holder, interp + layout.gil_locked


def refusal(runtime: PythonRuntime, why: str) -> PythonRefused:
    """``runtime`` refused after all: ``why`` (a phrase) says why."""
    return _refused(runtime.pid, runtime.path, runtime.version, why)


def _refused(pid: int, path: str, version: str, why: str) -> PythonRefused:
    message = (
        f"process {pid} runs Python {version} ({path}): no Python frames, {why};"
        " native stacks go on"
    )
    return PythonRefused(pid, path, version, message)


def _version_text(hexversion: int) -> str:
    major, minor, micro = hexversion >> 24, (hexversion >> 16) & 0xFF, (hexversion >> 8) & 0xFF
    return f"{major}.{minor}.{micro}"


def _code_layout_problem(
    reader: _Memory, code_type: int | None, bias: int, layout: PythonLayout
) -> str:
    """ "" when PyCode_Type says code objects are laid out as ``layout`` says."""
    if code_type is None:
        return "PyCode_Type not found to check the code object layout"
    basicsize = reader.u64(code_type + bias + TP_BASICSIZE)
    if basicsize != layout.code_size:
        return f"code objects are {basicsize} bytes, expected {layout.code_size}"
    expected = {
        "co_firstlineno": layout.code_firstlineno,
        "co_filename": layout.code_filename,
        "co_name": layout.code_name,
        "co_qualname": layout.code_qualname,
        "co_linetable": layout.code_linetable,
    }
    members = reader.u64(code_type + bias + TP_MEMBERS)
    table = reader.read(members, MEMBER_DEF.size * MAX_MEMBERS) if members else None
    if table is None:
        return "PyCode_Type's member table cannot be read"
    offsets: dict[str, int] = {}
    for name_at, _type, offset, _flags, _doc in MEMBER_DEF.iter_unpack(table):
        if not name_at:
            break
        name = reader.cstring(name_at)
        if name in expected:
            offsets[name] = offset
    wrong = [n for n, want in expected.items() if offsets.get(n) != want]
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
