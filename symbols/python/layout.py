"""Where CPython keeps what the frame walker and the code-object reader need, per version.

Owns :class:`PythonLayout` (x86-64 byte offsets: thread state, interpreter
frame, code object, str and bytes objects, GIL), ``LAYOUT_311`` and
``LAYOUT_312`` (CPython 3.11's and 3.12's, checked at attach against
``PyCode_Type``'s member table) and
:func:`parse_debug_offsets`: the layout of a CPython 3.13 or 3.14 read from
the target's own ``_Py_DebugOffsets``, the table CPython keeps for
out-of-process tools as the first field of ``_PyRuntime``: the cookie
``xdebugpy``, ``PY_VERSION_HEX``, a free-threaded flag, then groups of
``uint64`` offsets whose set and order differ per minor version. A table
that does not parse as its minor version's is a reason (a string), never a
guess. Only facts about offsets live here; reading memory is the caller's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

COOKIE = b"xdebugpy"
HEADER = struct.Struct("<8sQQ")  # cookie, version, free_threaded


@dataclass(frozen=True, slots=True)
class PythonLayout:
    """Byte offsets of one CPython build (x86-64)."""

    # Thread state -> innermost frame: tstate->cframe->current_frame (3.11,
    # 3.12: ``tstate_cframe`` >= 0) or tstate->current_frame (3.13+: -1).
    tstate_cframe: int
    current_frame: int
    native_thread_id: int
    # _PyInterpreterFrame
    frame_code: int  # f_code / f_executable
    frame_previous: int
    frame_instr: int  # prev_instr (3.11, 3.12) / instr_ptr (3.13+)
    frame_entry: int  # is_entry (3.11) / owner (3.12+): one byte
    entry_owner: int  # 0: the byte is a flag on the entry frame itself; else the
    # owner value of the shim frame each eval-loop invocation pushes (3.12+)
    code_tag_bits: int  # low bits of a tagged f_executable (3.14's _PyStackRef)
    # PyCodeObject
    code_size: int  # where the bytecode starts (co_code_adaptive)
    code_firstlineno: int
    code_filename: int
    code_name: int
    code_qualname: int
    code_linetable: int
    # str (PyASCIIObject / PyCompactUnicodeObject) and bytes
    str_length: int = 16
    str_hash: int = 24
    str_state: int = 32
    str_ascii_data: int = 48
    str_compact_data: int = 72
    bytes_size: int = 16
    bytes_data: int = 32
    # The runtime and the main interpreter
    interpreters_head: int = 40
    imports_modules: int = 0  # 0: thread names are not read for this version
    # Objects read for thread names (symbols/python/objects.py): dicts, ints
    # (3.12+: a tagged digit count), instances' attributes (``instances``: the
    # minor version whose scheme they follow, 11, 12 or 13), the heap type's
    # shared keys, and the header before a PyDictValues' array (3.13+: 8).
    dict_keys: int = 32
    dict_values: int = 40
    long_tagged: bool = False
    long_size: int = 16
    long_digits: int = 24
    instances: int = 11
    ht_cached_keys: int = 872
    values_header: int = 0
    # --gil: the GIL's holder (a PyThreadState *) and locked flag (an int):
    # relative to _PyRuntime (``gil_in_interp`` False) or to the main
    # interpreter; ``gil_locked`` -1: the holder is 0 whenever the GIL is free.
    gil_in_interp: bool = False
    gil_holder: int = 576
    gil_locked: int = -1


# CPython 3.11 on x86-64: offsetof() against Debian's 3.11.2 headers;
# python/runtime.py checks the code object's against PyCode_Type at attach.
LAYOUT_311 = PythonLayout(
    tstate_cframe=56,
    current_frame=8,
    native_thread_id=160,
    frame_code=32,
    frame_previous=48,
    frame_instr=56,
    frame_entry=68,
    entry_owner=0,
    code_tag_bits=0,
    code_size=184,
    code_firstlineno=72,
    code_filename=112,
    code_name=120,
    code_qualname=128,
    code_linetable=136,
    imports_modules=888,
)

# CPython 3.12 on x86-64: offsetof() from the DWARF of a 3.12.1 built from
# CPython's source (pyenv); python/runtime.py checks the code object's against
# PyCode_Type at attach. prev_instr as in 3.11; the entry marker is the shim
# frame each eval-loop invocation pushes (owner FRAME_OWNED_BY_CSTACK, 3); the
# GIL is the interpreter's own (_gil at +1040: last_holder +8, locked +16);
# an instance's attributes: its values (tagged: address - 1) or its dict at -24.
LAYOUT_312 = PythonLayout(
    tstate_cframe=56,
    current_frame=0,
    native_thread_id=144,
    frame_code=0,
    frame_previous=8,
    frame_instr=56,
    frame_entry=70,
    entry_owner=3,
    code_tag_bits=0,
    code_size=192,
    code_firstlineno=68,
    code_filename=112,
    code_name=120,
    code_qualname=128,
    code_linetable=136,
    str_ascii_data=40,
    str_compact_data=56,
    imports_modules=944,
    long_tagged=True,
    instances=12,
    ht_cached_keys=880,
    gil_in_interp=True,
    gil_holder=1040 + 8,
    gil_locked=1040 + 16,
)

# The groups of _Py_DebugOffsets after its header, per minor version, as
# CPython's own definition lists them (each field a uint64).
_GROUPS_313: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("runtime_state", ("size", "finalizing", "interpreters_head")),
    (
        "interpreter_state",
        (
            "size",
            "id",
            "next",
            "threads_head",
            "gc",
            "imports_modules",
            "sysdict",
            "builtins",
            "ceval_gil",
            "gil_runtime_state",
            "gil_runtime_state_enabled",
            "gil_runtime_state_locked",
            "gil_runtime_state_holder",
        ),
    ),
    (
        "thread_state",
        (
            "size",
            "prev",
            "next",
            "interp",
            "current_frame",
            "thread_id",
            "native_thread_id",
            "datastack_chunk",
            "status",
        ),
    ),
    (
        "interpreter_frame",
        ("size", "previous", "executable", "instr_ptr", "localsplus", "owner"),
    ),
    (
        "code_object",
        (
            "size",
            "filename",
            "name",
            "qualname",
            "linetable",
            "firstlineno",
            "argcount",
            "localsplusnames",
            "localspluskinds",
            "co_code_adaptive",
        ),
    ),
    ("pyobject", ("size", "ob_type")),
    ("type_object", ("size", "tp_name", "tp_repr", "tp_flags")),
    ("tuple_object", ("size", "ob_item", "ob_size")),
    ("list_object", ("size", "ob_item", "ob_size")),
    ("dict_object", ("size", "ma_keys", "ma_values")),
    ("float_object", ("size", "ob_fval")),
    ("long_object", ("size", "lv_tag", "ob_digit")),
    ("bytes_object", ("size", "ob_size", "ob_sval")),
    ("unicode_object", ("size", "state", "length", "asciiobject_size")),
)


def _with(
    groups: tuple[tuple[str, tuple[str, ...]], ...],
    changed: dict[str, tuple[str, ...]],
    after: dict[str, tuple[tuple[str, tuple[str, ...]], ...]],
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``groups`` with the fields of some groups ``changed`` and new groups
    inserted ``after`` others."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for group, fields in groups:
        out.append((group, changed.get(group, fields)))
        out.extend(after.get(group, ()))
    return tuple(out)


# 3.14: threads_main, code_object_generation and tlbc_generation in the
# interpreter state, stackpointer and tlbc_index in the frame, co_tlbc in the
# code object, a set_object group after list_object, then gc, gen_object,
# llist_node and debugger_support groups at the end.
_GROUPS_314 = _with(
    _GROUPS_313,
    {
        "interpreter_state": (
            "size",
            "id",
            "next",
            "threads_head",
            "threads_main",
            "gc",
            "imports_modules",
            "sysdict",
            "builtins",
            "ceval_gil",
            "gil_runtime_state",
            "gil_runtime_state_enabled",
            "gil_runtime_state_locked",
            "gil_runtime_state_holder",
            "code_object_generation",
            "tlbc_generation",
        ),
        "interpreter_frame": (
            "size",
            "previous",
            "executable",
            "instr_ptr",
            "localsplus",
            "owner",
            "stackpointer",
            "tlbc_index",
        ),
        "code_object": (
            *dict(_GROUPS_313)["code_object"],
            "co_tlbc",
        ),
    },
    {
        "list_object": (("set_object", ("size", "used", "table", "mask")),),
        "unicode_object": (
            ("gc", ("size", "collecting")),
            ("gen_object", ("size", "gi_name", "gi_iframe", "gi_frame_state")),
            ("llist_node", ("next", "prev")),
        ),
    },
)
GROUPS: dict[int, tuple[tuple[str, tuple[str, ...]], ...]] = {13: _GROUPS_313, 14: _GROUPS_314}
# The entry (shim) frame's owner: FRAME_OWNED_BY_CSTACK in 3.13,
# FRAME_OWNED_BY_INTERPRETER in 3.14 (the enum was renumbered): 3 in both.
ENTRY_OWNER = {13: 3, 14: 3}
TAG_BITS = {13: 0, 14: 3}  # 3.14's f_executable is a _PyStackRef: mask & ~3
TABLE_BYTES = 8 * 160  # more than any minor version's table


def table_size(minor: int) -> int:
    """Bytes of minor version ``minor``'s _Py_DebugOffsets (0: unknown version)."""
    groups = GROUPS.get(minor)
    return HEADER.size + 8 * sum(len(fields) for _, fields in groups) if groups else 0


def parse_fields(data: bytes, minor: int) -> dict[str, int] | str:
    """``group.field`` -> value of a version ``minor`` table, or why not."""
    groups = GROUPS.get(minor)
    if groups is None:
        return f"no _Py_DebugOffsets layout known for 3.{minor}"
    if len(data) < table_size(minor):
        return "_Py_DebugOffsets cut short"
    cookie, version, free_threaded = HEADER.unpack_from(data, 0)
    if cookie != COOKIE:
        return "no _Py_DebugOffsets at _PyRuntime (cookie missing)"
    if free_threaded:
        return "free-threaded builds are not supported"
    if (version >> 16) & 0xFF != minor:
        return f"_Py_DebugOffsets is version {version:#x}'s, not 3.{minor}'s"
    fields: dict[str, int] = {}
    at = HEADER.size
    for group, names in groups:
        for name in names:
            fields[f"{group}.{name}"] = int.from_bytes(data[at : at + 8], "little")
            at += 8
    return fields


def parse_debug_offsets(data: bytes, minor: int) -> PythonLayout | str:
    """The layout from a 3.``minor`` target's _Py_DebugOffsets (``data``: its
    first bytes), or a one-line reason it cannot be used."""
    fields = parse_fields(data, minor)
    if isinstance(fields, str):
        return fields
    problem = _implausible(fields)
    if problem:
        return f"_Py_DebugOffsets does not parse as 3.{minor}'s: {problem}"

    def f(name: str) -> int:
        return fields[name]

    return PythonLayout(
        tstate_cframe=-1,
        current_frame=f("thread_state.current_frame"),
        native_thread_id=f("thread_state.native_thread_id"),
        frame_code=f("interpreter_frame.executable"),
        frame_previous=f("interpreter_frame.previous"),
        frame_instr=f("interpreter_frame.instr_ptr"),
        frame_entry=f("interpreter_frame.owner"),
        entry_owner=ENTRY_OWNER[minor],
        code_tag_bits=TAG_BITS[minor],
        code_size=f("code_object.co_code_adaptive"),
        code_firstlineno=f("code_object.firstlineno"),
        code_filename=f("code_object.filename"),
        code_name=f("code_object.name"),
        code_qualname=f("code_object.qualname"),
        code_linetable=f("code_object.linetable"),
        str_length=f("unicode_object.length"),
        str_state=f("unicode_object.state"),
        # PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject.
        str_ascii_data=f("unicode_object.asciiobject_size"),
        str_compact_data=f("unicode_object.asciiobject_size") + 16,
        bytes_size=f("bytes_object.ob_size"),
        bytes_data=f("bytes_object.ob_sval"),
        interpreters_head=f("runtime_state.interpreters_head"),
        imports_modules=f("interpreter_state.imports_modules"),
        dict_keys=f("dict_object.ma_keys"),
        dict_values=f("dict_object.ma_values"),
        long_tagged=True,
        long_size=f("long_object.lv_tag"),
        long_digits=f("long_object.ob_digit"),
        instances=13,
        # PyHeapTypeObject: the type, then as_async, as_number, as_mapping,
        # as_sequence, as_buffer (55 pointers), ht_name, ht_slots, ht_qualname.
        ht_cached_keys=f("type_object.size") + 8 * (55 + 3),
        values_header=8,  # PyDictValues: capacity, size, embedded, valid
        gil_in_interp=True,
        gil_holder=f("interpreter_state.gil_runtime_state_holder"),
        gil_locked=f("interpreter_state.gil_runtime_state_locked"),
    )


# Bounds every sane table keeps: the walker reads a frame in one window and a
# code object's identity fields in another (bpf/python.bpf.c).
_FRAME_FIELDS = ("previous", "executable", "instr_ptr", "owner")
_CODE_FIELDS = ("filename", "name", "qualname", "linetable", "firstlineno")


def _implausible(fields: dict[str, int]) -> str:
    frame_size = fields["interpreter_frame.size"]
    if not 32 <= frame_size <= 256:
        return f"frame size {frame_size}"
    for name in _FRAME_FIELDS:
        if fields[f"interpreter_frame.{name}"] >= min(frame_size, FRAME_WINDOW):
            return f"frame field {name} at {fields[f'interpreter_frame.{name}']}"
    code_size = fields["code_object.co_code_adaptive"]
    if not 64 <= code_size <= 512:
        return f"bytecode at {code_size}"
    for name in _CODE_FIELDS:
        if not 16 <= fields[f"code_object.{name}"] < code_size:
            return f"code field {name} at {fields[f'code_object.{name}']}"
    if fields["thread_state.current_frame"] >= fields["thread_state.size"]:
        return "current_frame outside the thread state"
    if fields["pyobject.ob_type"] != 8 or fields["unicode_object.state"] != 32:
        return "object header not CPython's x86-64 one"
    return ""


FRAME_WINDOW = 80  # bytes the walker reads at a frame's start
