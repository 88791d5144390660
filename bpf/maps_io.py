"""Reading and emptying BCC maps: stack ids to addresses, hash drains, stack-map clears."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
from typing import Any

from bpftop.bpf.raw import Addresses, RawSample
from bpftop.bpf.unwinder import WALKER_ID_BIT


class StackReader:
    """Reads stack ids of one generation's stack map, once per id per drain."""

    def __init__(self, table: Any, walked: dict[int, Addresses] | None = None) -> None:
        self._table = table
        self._cache: dict[int, Addresses] = {}
        self._walked = walked or {}

    @property
    def distinct(self) -> int:
        return len(self._cache)

    def read(self, stack_id: int) -> tuple[Addresses, str]:
        if stack_id < 0:
            return (), errno.errorcode.get(-stack_id, str(stack_id))
        if stack_id & WALKER_ID_BIT:  # from the .eh_frame walker's own store
            walked = self._walked.get(stack_id)
            return (walked, "") if walked is not None else ((), "ENOENT")
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
        return RawSample(key.tgid, key.tid, user, kernel, count, user_err, kernel_err)

    def weighted(self, key: Any, value: Any) -> RawSample:
        """A uretprobe/offcpu entry: count and ns, the probed function innermost."""
        sample = self.sample(key, int(value.count))
        user = ((int(key.leaf_ip),) if key.leaf_ip else ()) + sample.user_stack
        return dataclasses.replace(sample, user_stack=user, weight_ns=int(value.weight_ns))


def clear_stacks(table: Any) -> None:
    """Empty a stack map (BCC's ``StackTrace.clear()`` does nothing)."""
    for key in list(table.keys()):
        with contextlib.suppress(KeyError):
            del table[key]


ENOTSUPP = 524
"""The kernel's own "operation not supported" (not in userspace errno)."""
BATCH_UNSUPPORTED = tuple(
    os.strerror(code) for code in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS, ENOTSUPP)
)
"""How BCC words a batch operation this kernel or map does not have."""


def drain_hash(table: Any) -> list[tuple[Any, Any]]:
    """Every entry of ``table``, emptied: atomically per entry with the batch
    operation; where the kernel has none, read then clear (the map drained is
    the inactive generation, so nothing is counted into it meanwhile). Other
    failures are raised, not hidden behind the fallback."""
    batch = getattr(table, "items_lookup_and_delete_batch", None)
    if batch is not None:
        try:
            return list(batch())
        except Exception as err:  # BCC raises a plain Exception naming the errno
            if type(err) is not Exception or not str(err).endswith(BATCH_UNSUPPORTED):
                raise
    items = [(k, getattr(v, "value", v)) for k, v in table.items()]
    table.clear()
    return items
