"""Emptying a BPF hash map in a few syscalls, into buffers allocated once.

Owns :class:`HashDrain` and :func:`record_format`. BCC's own
``items_lookup_and_delete_batch()`` allocates (and zeroes) ``max_entries``
keys and values on every call and then makes a ctypes object per entry: for
the walker's stack store (32,768 values of 1 KB) that is 34 MB each tick,
most of ``record``'s own CPU at 99 Hz. A :class:`HashDrain` keeps one buffer
of ``chunk`` entries per map, drains with BPF_MAP_LOOKUP_AND_DELETE_BATCH
chunk by chunk, and hands back the raw bytes; :func:`record_format` gives the
``struct`` format of a ctypes key or value, so the caller unpacks them in
bulk. On a kernel without batch operations it falls back to BCC's
read-then-clear (the map is the inactive generation: no race).
"""

from __future__ import annotations

import ctypes as ct
import errno
from dataclasses import dataclass
from typing import Any

DRAIN_CHUNK = 2048  # entries per syscall, at most (a hash bucket never holds more)
DRAIN_BYTES = 1 << 18  # keys and values per syscall, at most: the buffers stay small
MIN_CHUNK = 32  # ... but a chunk holds this many (a bucket bigger than a chunk doubles it)
_SCALARS = {
    1: "B",
    2: "H",
    4: "I",
    8: "Q",
}
_UNSUPPORTED = (errno.EINVAL, errno.ENOTSUP, errno.ENOSYS, 524)
"""No batch operations here (524: ENOTSUPP, the kernel's own "not supported");
anything else is raised, never hidden behind the slow fallback."""
_SIGNED = (ct.c_int8, ct.c_int16, ct.c_int32, ct.c_int64, ct.c_long, ct.c_longlong)


@dataclass(frozen=True, slots=True)
class Drained:
    """The entries taken from a map: ``count`` keys and values, packed as in the kernel."""

    count: int
    keys: bytes
    values: bytes


class HashDrain:
    """Empties one hash map, chunk by chunk, through buffers it keeps."""

    def __init__(self, table: Any, chunk: int = DRAIN_CHUNK) -> None:
        self._table = table
        self.key_size = ct.sizeof(table.Key)
        self.value_size = ct.sizeof(table.Leaf)
        self._chunk = 0
        self._batch: bool | None = None  # None: not tried yet
        # Chunks of DRAIN_CHUNK of the walkers' stores (1-3 KB values) kept 16 MiB
        # of buffers resident (tracemalloc of a record at scale) for no speed.
        by_bytes = max(MIN_CHUNK, DRAIN_BYTES // (self.key_size + self.value_size))
        self._size(min(chunk, by_bytes, max(1, int(table.max_entries))))

    def _size(self, chunk: int) -> None:
        self._chunk = chunk
        self._keys = (ct.c_char * (chunk * self.key_size))()
        self._values = (ct.c_char * (chunk * self.value_size))()

    def drain(self) -> Drained:
        """Every entry of the map, removed from it."""
        if self._batch is not False:
            found = self._drain_batch()
            if found is not None:
                self._batch = True
                return found
            self._batch = False
        return self._drain_slow()

    def _drain_batch(self) -> Drained | None:
        """None when the kernel cannot do batch operations on this map."""
        from bcc.libbcc import lib

        keys: list[bytes] = []
        values: list[bytes] = []
        total = 0
        token, count = ct.c_uint64(0), ct.c_uint32(0)
        started = False
        while True:
            count.value = self._chunk
            in_batch = ct.cast(ct.byref(token), ct.POINTER(ct.c_uint32)) if started else None
            res = lib.bpf_lookup_and_delete_batch(
                self._table.map_fd,
                in_batch,
                ct.cast(ct.byref(token), ct.POINTER(ct.c_uint32)),
                self._keys,
                self._values,
                ct.byref(count),
            )
            err = ct.get_errno() if res != 0 else 0
            got = int(count.value)
            if got:  # (``.raw`` would copy the whole buffer first)
                keys.append(ct.string_at(self._keys, got * self.key_size))
                values.append(ct.string_at(self._values, got * self.value_size))
                total += got
            if res == 0:
                started = True
                continue
            if err == errno.ENOENT:
                return Drained(total, b"".join(keys), b"".join(values))
            if err == errno.ENOSPC and not got:  # one bucket holds more than a chunk
                self._size(self._chunk * 2)
                continue
            if (
                not started
                and not total
                and err in (errno.EINVAL, errno.ENOTSUP, errno.ENOSYS, 524)
            ):
                return None  # 524: ENOTSUPP, the kernel's "not supported"
            raise OSError(err, f"draining BPF map: {errno.errorcode.get(err, err)}")

    def _drain_slow(self) -> Drained:
        items = list(self._table.items())
        self._table.clear()
        return Drained(
            len(items), b"".join(bytes(k) for k, _ in items), b"".join(bytes(v) for _, v in items)
        )


def record_format(ctype: Any) -> str:
    """The ``struct`` format (native layout, no alignment added) of a ctypes
    scalar or a structure of scalars; padding becomes ``x``."""
    if not hasattr(ctype, "_fields_"):
        return "=" + _scalar(ctype)
    parts: list[str] = []
    at = 0
    for name, field_type, *_ in ctype._fields_:
        offset = getattr(ctype, name).offset
        parts.append("x" * (offset - at))
        parts.append(_scalar(field_type))
        at = offset + ct.sizeof(field_type)
    parts.append("x" * (ct.sizeof(ctype) - at))
    return "=" + "".join(parts)


def _scalar(ctype: Any) -> str:
    size = ct.sizeof(ctype)
    if size not in _SCALARS or hasattr(ctype, "_length_"):
        raise TypeError(f"{ctype!r} is not a scalar of 1, 2, 4 or 8 bytes")
    code = _SCALARS[size]
    return code.lower() if issubclass(ctype, _SIGNED) else code
