"""Reading and emptying BCC maps: stack ids to addresses, hash drains, stack-map clears.

Owns :class:`StackReader`, :class:`MapDrains` (each hash map of the program
emptied through its own :class:`~bpftop.bpf.batch.HashDrain`, entries as
named tuples) and :func:`clear_stacks`.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import errno
import struct
from typing import Any

from bpftop.bpf.batch import HashDrain, record_format
from bpftop.bpf.python_walk import PythonStack
from bpftop.bpf.raw import Addresses, RawSample, WalkedStack
from bpftop.bpf.unwinder import WALKER_ID_BIT

NOT_WALKED = WalkedStack(b"")


class StackReader:
    """Reads stack ids of one generation's stack map, once per id per drain."""

    def __init__(
        self,
        table: Any,
        walked: dict[int, WalkedStack] | None = None,
        python: dict[int, PythonStack] | None = None,
    ) -> None:
        self._table = table
        self._cache: dict[int, Addresses] = {}
        self._walked = walked or {}
        self._python = python or {}

    @property
    def distinct(self) -> int:
        return len(self._cache)

    def read(self, stack_id: int) -> tuple[Addresses, str]:
        if stack_id < 0:
            return (), errno.errorcode.get(-stack_id, str(stack_id))
        if stack_id & WALKER_ID_BIT:  # from the .eh_frame walker's own store
            walked = self._walked.get(stack_id)
            if walked is None:
                return (), "ENOENT"
            return tuple(memoryview(walked.packed).cast("Q")), ""
        found = self._cache.get(stack_id)
        if found is None:
            try:
                found = tuple(self._table.walk(stack_id))
            except KeyError:
                return (), "ENOENT"
            self._cache[stack_id] = found
        return found, ""

    def sample(self, key: Any, count: int) -> RawSample:
        user, user_err = self.read(key.user_stack_id)
        kernel, kernel_err = self.read(key.kernel_stack_id)
        if kernel_err == "EFAULT":
            kernel_err = ""  # sampled in user mode: there is no kernel stack
        walked = self._walked.get(key.user_stack_id, NOT_WALKED)  # (get_stackid's: none)
        sample = RawSample(
            key.tgid, key.tid, user, kernel, count, user_err, kernel_err,
            image=getattr(key, "image", 0), fp_from=walked.fp_from, fp_end=walked.fp_end,
            user_key=walked.packed,
        )  # fmt: skip
        python = self._python.get(getattr(key, "python_stack_id", 0))
        if python is None:  # none (0), or lost (-EEXIST): the native stack alone
            return sample
        return dataclasses.replace(
            sample, python_stack=python.frames, python_truncated=python.truncated
        )

    def weighted(self, key: Any, value: Any) -> RawSample:
        """A uretprobe/offcpu entry: count and ns, the probed function innermost."""
        sample = self.sample(key, int(value.count))
        leaf = (int(key.leaf_ip),) if key.leaf_ip else ()
        fp_from = sample.fp_from + len(leaf) if sample.fp_from >= 0 else -1
        return dataclasses.replace(
            sample, user_stack=leaf + sample.user_stack, weight_ns=int(value.weight_ns),
            fp_from=fp_from, user_key=b"",
        )  # fmt: skip


def clear_stacks(table: Any) -> None:
    """Empty a stack map (BCC's ``StackTrace.clear()`` does nothing)."""
    for key in list(table.keys()):
        with contextlib.suppress(KeyError):
            del table[key]


class MapDrains:
    """Empties the program's hash maps by name; keys (and structure values)
    come back as named tuples with the C fields' names, scalar values as ints."""

    def __init__(self, bpf: Any) -> None:
        self._bpf = bpf
        self._drains: dict[str, tuple[HashDrain, _Unpacker, _Unpacker]] = {}

    def entries(self, name: str) -> list[tuple[Any, Any]]:
        """Every (key, value) of map ``name``, removed from it."""
        found = self._drains.get(name)
        if found is None:
            table = self._bpf[name.encode()]
            found = (HashDrain(table), _Unpacker(table.Key), _Unpacker(table.Leaf))
            self._drains[name] = found
        drain, keys, values = found
        drained = drain.drain()
        return list(zip(keys.unpack(drained.keys), values.unpack(drained.values), strict=True))


class _Unpacker:
    """Packed ctypes records (a scalar or a structure of scalars) to Python values."""

    def __init__(self, ctype: Any) -> None:
        self._format = struct.Struct(record_format(ctype))
        fields = [f[0] for f in getattr(ctype, "_fields_", ())]
        record: Any = collections.namedtuple("Record", fields) if fields else None
        self._make = None if record is None else record._make

    def unpack(self, packed: bytes) -> list[Any]:
        rows = self._format.iter_unpack(packed)
        if self._make is None:
            return [row[0] for row in rows]
        return list(map(self._make, rows))
