"""Offsets of kernel struct members from the running kernel's BTF.

Owns :func:`member_offset` and :func:`prefetch`: BCC compiles against headers that may not match
the running kernel (fallback headers), so a kernel-internal field the BPF
program must read (``task_struct.thread.fsbase``) is located by reading
/sys/kernel/btf/vmlinux here and handed to the program through a map.
Only what that needs is parsed: type records are skipped by their sizes,
structs and unions keep their members. Answers are cached, the parsed types
are not (15 MiB held for the process's life, for one offset). The parse is
~0.3 s of Python: ``prefetch`` runs it while BCC compiles (which releases the
GIL), off the path to the program's load.
"""

from __future__ import annotations

import functools
import struct
import threading
from dataclasses import dataclass

VMLINUX_BTF = "/sys/kernel/btf/vmlinux"
BTF_MAGIC = 0xEB9F
KIND_STRUCT, KIND_UNION = 4, 5
# Extra bytes after each type's 12-byte header: per kind, fixed and per vlen item.
_EXTRA = {
    1: (4, 0),  # int
    2: (0, 0),  # ptr
    3: (12, 0),  # array
    4: (0, 12),  # struct
    5: (0, 12),  # union
    6: (0, 8),  # enum
    7: (0, 0),  # fwd
    8: (0, 0),  # typedef
    9: (0, 0),  # volatile
    10: (0, 0),  # const
    11: (0, 0),  # restrict
    12: (0, 0),  # func
    13: (0, 8),  # func_proto
    14: (4, 0),  # var
    15: (0, 12),  # datasec
    16: (0, 0),  # float
    17: (4, 0),  # decl_tag
    18: (0, 0),  # type_tag
    19: (0, 12),  # enum64
}
_QUALIFIERS = {8, 9, 10, 11, 18}  # typedef, volatile, const, restrict, type_tag


@dataclass(frozen=True, slots=True)
class _Type:
    kind: int
    name: str
    ref: int  # size or referenced type id
    members: tuple[tuple[str, int, int], ...] = ()  # (name, type id, bit offset)


@functools.cache
def member_offset(struct_name: str, *path: str, btf_path: str = VMLINUX_BTF) -> int | None:
    """Byte offset of ``struct_name.path[0].path[1]...``; None when the kernel
    has no BTF or no such member."""
    try:
        types = _types(btf_path)
    except (OSError, ValueError, struct.error):
        return None
    start = next(
        (i for i, t in types.items() if t.kind == KIND_STRUCT and t.name == struct_name), None
    )
    if start is None:
        return None
    return _walk(types, start, path)


def prefetch(struct_name: str, *path: str) -> threading.Thread:
    """``member_offset(struct_name, *path)`` on a thread of its own; once it is
    joined, the same call answers from the cache."""
    thread = threading.Thread(
        target=member_offset, args=(struct_name, *path), name="bpftop-btf", daemon=True
    )
    thread.start()
    return thread


def _walk(types: dict[int, _Type], type_id: int, path: tuple[str, ...]) -> int | None:
    offset = 0
    for name in path:
        found = _resolve(types, type_id)
        if found is None or found.kind not in (KIND_STRUCT, KIND_UNION):
            return None
        member = _member(types, found, name)
        if member is None:
            return None
        bits, type_id = member
        offset += bits // 8
    return offset


def _member(types: dict[int, _Type], owner: _Type, name: str) -> tuple[int, int] | None:
    """(bit offset, type id) of ``name`` in ``owner``, looking into anonymous members."""
    for member_name, type_id, bits in owner.members:
        if member_name == name:
            return bits, type_id
        if not member_name:
            inner = _resolve(types, type_id)
            if inner is not None and inner.kind in (KIND_STRUCT, KIND_UNION):
                found = _member(types, inner, name)
                if found is not None:
                    return bits + found[0], found[1]
    return None


def _resolve(types: dict[int, _Type], type_id: int) -> _Type | None:
    for _ in range(32):
        found = types.get(type_id)
        if found is None or found.kind not in _QUALIFIERS:
            return found
        type_id = found.ref
    return None


def _types(path: str) -> dict[int, _Type]:
    with open(path, "rb") as stream:
        data = stream.read()
    magic, _version, _flags, hdr_len = struct.unpack_from("<HBBI", data, 0)
    if magic != BTF_MAGIC:
        raise ValueError(f"{path}: not BTF")
    type_off, type_len, str_off, _str_len = struct.unpack_from("<IIII", data, 8)
    types_at, strings_at = hdr_len + type_off, hdr_len + str_off
    types: dict[int, _Type] = {}
    at, end, type_id = types_at, types_at + type_len, 1
    while at < end:
        name_off, info, ref = struct.unpack_from("<III", data, at)
        kind, vlen, kind_flag = (info >> 24) & 0x1F, info & 0xFFFF, info >> 31
        fixed, per_item = _EXTRA[kind]
        members: tuple[tuple[str, int, int], ...] = ()
        if kind in (KIND_STRUCT, KIND_UNION):
            rows = struct.iter_unpack("<III", data[at + 12 : at + 12 + 12 * vlen])
            members = tuple(
                (_string(data, strings_at + n), t, (o & 0xFFFFFF) if kind_flag else o)
                for n, t, o in rows
            )
        types[type_id] = _Type(kind, _string(data, strings_at + name_off), ref, members)
        at += 12 + fixed + per_item * vlen
        type_id += 1
    return types


def _string(data: bytes, at: int) -> str:
    return data[at : data.index(b"\0", at)].decode(errors="replace")
