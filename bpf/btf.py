"""Offsets of kernel struct members from the running kernel's BTF.

Owns :func:`member_offset`: BCC compiles against headers that may not match
the running kernel (fallback headers), so a kernel-internal field the BPF
program must read (``task_struct.thread.fsbase``) is located by reading
/sys/kernel/btf/vmlinux here and handed to the program through a map.
Only what that needs is read: one pass finds where each type record starts
(by its size), then the struct is found by kind and name and its members are
decoded along the path: 0.05 s (decoding every name and member first took
0.32 s, on the way from the compile to the first BPF sample). Answers are
cached, the blob is not (5 MB held for the process's life, for one offset),
and kept on disk per kernel (/var/cache/bpftop/btf), so a later start reads
no BTF at all.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
import struct
from pathlib import Path

VMLINUX_BTF = "/sys/kernel/btf/vmlinux"
OFFSET_CACHE = Path("/var/cache/bpftop/btf")  # beside the fallback headers (environment)
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


@functools.cache
def member_offset(
    struct_name: str, *path: str, btf_path: str = VMLINUX_BTF, cache_dir: Path | None = OFFSET_CACHE
) -> int | None:
    """Byte offset of ``struct_name.path[0].path[1]...``; None when the kernel
    has no BTF or no such member. Kept in ``cache_dir`` under the kernel's
    identity (uname's release and version, the BTF file's path and size): a
    later run reads one small file, not the BTF (0.06 CPU-s, every start)."""
    entry = _entry(cache_dir, btf_path, (struct_name, *path))
    with contextlib.suppress(OSError, ValueError):
        if entry is not None:
            text = entry.read_text()
            return None if text == "none" else int(text)
    try:
        with open(btf_path, "rb") as stream:
            btf = _Btf(stream.read())
        start = btf.find_struct(struct_name)
        found = None if start is None else _walk(btf, start, path)
    except (OSError, ValueError, IndexError, struct.error):
        return None
    if entry is not None:
        with contextlib.suppress(OSError):
            entry.parent.mkdir(parents=True, exist_ok=True)
            partial = entry.with_name(f"{entry.name}.{os.getpid()}")
            partial.write_text("none" if found is None else str(found))
            os.replace(partial, entry)
    return found


def _entry(cache_dir: Path | None, btf_path: str, names: tuple[str, ...]) -> Path | None:
    """Where the answer for ``names`` on this kernel is kept (None: nowhere)."""
    try:
        size = os.stat(btf_path).st_size
    except OSError:
        return None
    kernel = f"{platform.release()} {platform.version()} {os.path.abspath(btf_path)} {size}"
    key = hashlib.sha256(kernel.encode()).hexdigest()[:16]
    return None if cache_dir is None else cache_dir / key / ".".join(names)


def _walk(btf: _Btf, type_id: int, path: tuple[str, ...]) -> int | None:
    offset = 0
    for name in path:
        found = btf.resolve(type_id)
        if found is None or btf.kind(found) not in (KIND_STRUCT, KIND_UNION):
            return None
        member = _member(btf, found, name)
        if member is None:
            return None
        bits, type_id = member
        offset += bits // 8
    return offset


def _member(btf: _Btf, owner: int, name: str) -> tuple[int, int] | None:
    """(bit offset, type id) of ``name`` in ``owner``, looking into anonymous members."""
    for member_name, type_id, bits in btf.members(owner):
        if member_name == name:
            return bits, type_id
        if not member_name:
            inner = btf.resolve(type_id)
            if inner is not None and btf.kind(inner) in (KIND_STRUCT, KIND_UNION):
                found = _member(btf, inner, name)
                if found is not None:
                    return bits + found[0], found[1]
    return None


_HEADER = struct.Struct("<III")  # name_off, info, size or type (every type record)


class _Btf:
    """One BTF blob's type records, found by id: only where each record starts
    is indexed (one pass over the types); names and members are read when
    asked (see the module's docstring for what that saves)."""

    def __init__(self, data: bytes) -> None:
        magic, _version, _flags, hdr_len = struct.unpack_from("<HBBI", data, 0)
        if magic != BTF_MAGIC:
            raise ValueError("not BTF")
        type_off, type_len, str_off, _str_len = struct.unpack_from("<IIII", data, 8)
        self._data, self._strings = data, hdr_len + str_off
        self._at = [0]  # by type id; id 0 is void
        at, end = hdr_len + type_off, hdr_len + type_off + type_len
        while at < end:
            self._at.append(at)
            info = _HEADER.unpack_from(data, at)[1]
            fixed, per_item = _EXTRA[(info >> 24) & 0x1F]
            at += 12 + fixed + per_item * (info & 0xFFFF)

    def kind(self, type_id: int) -> int:
        return int(_HEADER.unpack_from(self._data, self._at[type_id])[1] >> 24) & 0x1F

    def find_struct(self, name: str) -> int | None:
        wanted = name.encode() + b"\0"
        for type_id in range(1, len(self._at)):
            name_off, info, _ = _HEADER.unpack_from(self._data, self._at[type_id])
            if (info >> 24) & 0x1F == KIND_STRUCT and self._data.startswith(
                wanted, self._strings + name_off
            ):
                return type_id
        return None

    def resolve(self, type_id: int) -> int | None:
        """``type_id`` past typedefs and qualifiers."""
        for _ in range(32):
            if not 0 < type_id < len(self._at):
                return None
            kind = self.kind(type_id)
            if kind not in _QUALIFIERS:
                return type_id
            type_id = int(_HEADER.unpack_from(self._data, self._at[type_id])[2])
        return None

    def members(self, type_id: int) -> list[tuple[str, int, int]]:
        """(name, type id, bit offset) of a struct's or union's members."""
        at = self._at[type_id]
        info = _HEADER.unpack_from(self._data, at)[1]
        rows = struct.iter_unpack("<III", self._data[at + 12 : at + 12 + 12 * (info & 0xFFFF)])
        bitfields = info >> 31
        return [(self._string(n), t, (o & 0xFFFFFF) if bitfields else o) for n, t, o in rows]

    def _string(self, name_off: int) -> str:
        at = self._strings + name_off
        return self._data[at : self._data.index(b"\0", at)].decode(errors="replace")
