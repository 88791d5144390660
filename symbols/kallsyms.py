"""Kernel symbols from /proc/kallsyms, loaded once into sorted arrays.

Owns :class:`KernelSymbols`: text symbols (types t, T, w, W) with their
module (``[kernel]`` or the ``[module]`` kallsyms names), looked up by address
with ``bisect``. The ~120,000 symbols are kept packed (addresses and name
offsets in ``array``s, the names in one byte string, a module index each):
as Python lists of ints and strings they held 15.6 MiB for the process's life
(tracemalloc of a record), packed 5.2; a name is sliced out when looked up.
The file is parsed by one regular expression over its bytes and sorted with
numpy (the first kernel frame loads the table, in the first live tick): line
by line in Python it took 0.15-0.17 s, now 0.13-0.14, 0.05 of it the kernel
writing the file (``bench/symbols_bench.py``'s last line). When every
address reads 0 (kptr_restrict) or the file cannot be read, ``hidden`` is
True and every lookup gives a frame with reason ``KERNEL_HIDDEN``.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Iterable

import numpy as np

from bpftop.symbols.frame import Frame, Unresolved

KALLSYMS_PATH = "/proc/kallsyms"
KERNEL_MODULE = "[kernel]"
# No kernel function is this long: past it, the nearest symbol is not ours.
MAX_FUNCTION_BYTES = 1 << 20
# "ADDRESS TYPE NAME [MODULE]": text symbols only (t, T, w, W; lower case is local).
_TEXT_LINE = re.compile(
    rb"^([0-9a-fA-F]{1,16})[ \t]+([tTwW])[ \t]+(\S+)(?:[ \t]+\[([^\]\s]+)\])?", re.MULTILINE
)
_ANY_LINE = re.compile(rb"^[0-9a-fA-F]{1,16}[ \t]+\S[ \t]+\S", re.MULTILINE)
_NONZERO_LINE = re.compile(rb"^0*[1-9a-fA-F][0-9a-fA-F]{0,15}[ \t]+\S[ \t]+\S", re.MULTILINE)


class KernelSymbols:
    """Sorted kernel text symbols: start address, name and module."""

    __slots__ = ("_module_ids", "_module_names", "_name_at", "_names", "_starts", "error", "hidden")

    def __init__(self, data: bytes) -> None:
        """The table of kallsyms-format ``data`` (lines that do not parse are skipped)."""
        self.hidden: bool = _NONZERO_LINE.search(data) is None
        self.error: str | None = None if _ANY_LINE.search(data) else "no symbols read"
        found = _TEXT_LINE.findall(data)
        starts = np.fromiter((int(row[0], 16) for row in found), np.uint64, len(found))
        local = np.frombuffer(b"".join(row[1] for row in found), np.uint8) >= ord("a")
        order = np.lexsort((local, starts))  # by address, a global symbol first; stable
        order = order[starts[order] != 0]
        first = np.ones(len(order), bool)
        first[1:] = starts[order[1:]] != starts[order[:-1]]
        rows = order[first].tolist()  # one symbol an address
        names = [found[row][2] for row in rows]
        module_ids: dict[bytes, int] = {b"": 0}
        modules = [module_ids.setdefault(found[row][3], len(module_ids)) for row in rows]
        self._starts = array("Q", starts[order[first]].tobytes())
        self._name_at = array("Q", np.cumsum([0, *map(len, names)], dtype=np.uint64).tobytes())
        self._names = b"".join(names)
        self._module_ids = array("I", modules)
        self._module_names = [KERNEL_MODULE] + [
            f"[{name.decode(errors='replace')}]" for name in list(module_ids)[1:]
        ]

    @classmethod
    def from_text(cls, text: str) -> KernelSymbols:
        return cls(text.encode(errors="surrogateescape"))

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> KernelSymbols:
        return cls.from_text("\n".join(line.rstrip("\n") for line in lines))

    @classmethod
    def load(cls, path: str = KALLSYMS_PATH) -> KernelSymbols:
        """Read ``path``; an unreadable file gives a hidden, empty table."""
        try:
            with open(path, "rb") as stream:
                return cls(stream.read())
        except OSError as exc:
            table = cls(b"")
            table.error = f"{path}: {exc.strerror}"
            return table

    def __len__(self) -> int:
        return len(self._starts)

    def lookup(self, addr: int) -> Frame:
        """The frame for a kernel address (never raises)."""
        if self.hidden:
            return Frame(None, KERNEL_MODULE, addr, kernel=True, reason=Unresolved.KERNEL_HIDDEN)
        index = bisect.bisect_right(self._starts, addr) - 1
        if index < 0 or addr - self._starts[index] >= MAX_FUNCTION_BYTES:
            return Frame(None, KERNEL_MODULE, addr, kernel=True, reason=Unresolved.UNMAPPED)
        module = self._module_names[self._module_ids[index]]
        name = self._names[self._name_at[index] : self._name_at[index + 1]]
        return Frame(name.decode(errors="replace"), module, addr - self._starts[index], kernel=True)
