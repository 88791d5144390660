"""Kernel symbols from /proc/kallsyms, loaded once into sorted arrays.

Owns :class:`KernelSymbols`: text symbols (types t, T, w, W) with their
module (``[kernel]`` or the ``[module]`` kallsyms names), looked up by address
with ``bisect``. The ~120,000 symbols are kept packed (addresses and name
offsets in ``array``s, the names in one string, a module index each):
as Python lists of ints and strings they held 15.6 MiB for the process's life
(tracemalloc of a record), packed 5.2; a name is sliced out when looked up. When every
address reads 0 (kptr_restrict) or the file cannot
be read, ``hidden`` is True and every lookup gives a frame with reason
``KERNEL_HIDDEN``.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable
from itertools import accumulate

from bpftop.symbols.frame import Frame, Unresolved

KALLSYMS_PATH = "/proc/kallsyms"
KERNEL_MODULE = "[kernel]"
TEXT_TYPES = frozenset("tTwW")
# No kernel function is this long: past it, the nearest symbol is not ours.
MAX_FUNCTION_BYTES = 1 << 20


class KernelSymbols:
    """Sorted kernel text symbols: start address, name and module."""

    __slots__ = ("_module_ids", "_module_names", "_name_at", "_names", "_starts", "error", "hidden")

    def __init__(self, lines: Iterable[str]) -> None:
        row_at: dict[int, int] = {}  # address -> its row: a global symbol wins
        names: list[str] = []
        modules: list[int] = []
        is_global: list[bool] = []
        module_ids: dict[str, int] = {}
        any_line, any_nonzero = False, False
        for line in lines:
            parsed = _parse(line)
            if parsed is None:
                continue
            addr, kind, name, module = parsed
            any_line = True
            any_nonzero = any_nonzero or addr != 0
            if kind not in TEXT_TYPES or addr == 0:
                continue
            row, module_id = row_at.get(addr), module_ids.setdefault(module, len(module_ids))
            if row is None:
                row_at[addr] = len(names)
                names.append(name)
                modules.append(module_id)
                is_global.append(kind.isupper())
            elif kind.isupper() and not is_global[row]:
                names[row], modules[row], is_global[row] = name, module_id, True
        self.hidden: bool = not any_nonzero
        self.error: str | None = None if any_line else "no symbols read"
        self._starts = array("Q", sorted(row_at))
        rows = [row_at[addr] for addr in self._starts]
        del row_at
        self._module_ids = array("I", [modules[row] for row in rows])
        names[:] = [names[row] for row in rows]  # in address order, in place
        self._name_at = array("Q", accumulate(map(len, names), initial=0))
        self._names = "".join(names)
        self._module_names = list(module_ids)

    @classmethod
    def from_text(cls, text: str) -> KernelSymbols:
        return cls(text.splitlines())

    @classmethod
    def load(cls, path: str = KALLSYMS_PATH) -> KernelSymbols:
        """Read ``path``; an unreadable file gives a hidden, empty table."""
        try:
            with open(path, encoding="utf-8", errors="replace") as stream:
                return cls(stream)
        except OSError as exc:
            table = cls(())
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
        return Frame(name, module, addr - self._starts[index], kernel=True)


def _parse(line: str) -> tuple[int, str, str, str] | None:
    """``(address, type, name, module)`` of one kallsyms line, or None."""
    parts = line.split()
    if len(parts) < 3 or len(parts[1]) != 1:
        return None
    try:
        addr = int(parts[0], 16)
    except ValueError:
        return None
    module = KERNEL_MODULE
    if len(parts) >= 4 and parts[3].startswith("[") and parts[3].endswith("]"):
        module = parts[3]
    return addr, parts[1], parts[2], module
