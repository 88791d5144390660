"""Kernel symbols from /proc/kallsyms, loaded once into sorted arrays.

Owns :class:`KernelSymbols`: text symbols (types t, T, w, W) with their
module (``[kernel]`` or the ``[module]`` kallsyms names), looked up by address
with ``bisect``. When every address reads 0 (kptr_restrict) or the file cannot
be read, ``hidden`` is True and every lookup gives a frame with reason
``KERNEL_HIDDEN``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from bpftop.symbols.frame import Frame, Unresolved

KALLSYMS_PATH = "/proc/kallsyms"
KERNEL_MODULE = "[kernel]"
TEXT_TYPES = frozenset("tTwW")
# No kernel function is this long: past it, the nearest symbol is not ours.
MAX_FUNCTION_BYTES = 1 << 20


class KernelSymbols:
    """Sorted kernel text symbols: start address, name and module."""

    __slots__ = ("_modules", "_names", "_starts", "error", "hidden")

    def __init__(self, lines: Iterable[str]) -> None:
        rows: dict[int, tuple[str, str, bool]] = {}
        any_line, any_nonzero = False, False
        for line in lines:
            parsed = _parse(line)
            if parsed is None:
                continue
            addr, kind, name, module = parsed
            any_line = True
            any_nonzero = any_nonzero or addr != 0
            if kind in TEXT_TYPES and addr != 0:
                is_global = kind.isupper()
                if addr not in rows or (is_global and not rows[addr][2]):
                    rows[addr] = (name, module, is_global)
        self.hidden: bool = not any_nonzero
        self.error: str | None = None if any_line else "no symbols read"
        self._starts = sorted(rows)
        self._names = [rows[a][0] for a in self._starts]
        self._modules = [rows[a][1] for a in self._starts]

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
        module = self._modules[index]
        return Frame(self._names[index], module, addr - self._starts[index], kernel=True)


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
