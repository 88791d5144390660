"""Kernel symbols from /proc/kallsyms, loaded once into sorted arrays.

Owns :class:`KernelSymbols`: text symbols (types t, T, w, W) with their
module (``[kernel]`` or the ``[module]`` kallsyms names), looked up by address
with ``bisect``. The ~120,000 symbols are kept packed (addresses and name
offsets in ``array``s, the names in one string, a module index each):
as Python lists of ints and strings they held 15.6 MiB for the process's life
(tracemalloc of a record), packed 5.2; a name is sliced out when looked up.
``load`` reads the file as the kernel writes it (fixed-width address, type,
name, then a tab and ``[module]`` or nothing) with numpy, no Python object
per line: 0.06 s (0.04 of it the kernel writing the file) where the
line-by-line parser, which reads anything else, takes 0.15 s, in the live
view's first tick (``bench/symbols_bench.py``'s last line). Its arrays are
large and short-lived: bpftop maps such blocks from launch
(``process_watch.map_large_blocks``), else they stayed in the heap and the
live view peaked 20 MiB higher. When every address reads 0 (kptr_restrict)
or the file cannot be read, ``hidden`` is True and every lookup gives a
frame with reason ``KERNEL_HIDDEN``.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Iterable
from itertools import accumulate

import numpy as np
import numpy.typing as npt

from bpftop.symbols.frame import Frame, Unresolved

KALLSYMS_PATH = "/proc/kallsyms"
Ids = npt.NDArray[np.int64]
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
            with open(path, "rb") as stream:
                data = stream.read()
            table = _fixed_width(data)
            return table if table is not None else cls(data.decode(errors="replace").splitlines())
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


class Reading:
    """A :meth:`KernelSymbols.load` of ``path`` on a thread from creation: the
    kernel takes ~40 ms to write /proc/kallsyms and holds no GIL of ours
    meanwhile; the parse (~25 ms) then runs beside whatever the caller does."""

    def __init__(self, path: str = KALLSYMS_PATH) -> None:
        self.path = path
        self._table: KernelSymbols | None = None
        self.thread = threading.Thread(target=self._load, name="bpftop-kallsyms", daemon=True)
        self.thread.start()

    def _load(self) -> None:
        self._table = KernelSymbols.load(self.path)

    def result(self) -> KernelSymbols:
        """The table (read now if the thread failed)."""
        self.thread.join()
        return self._table if self._table is not None else KernelSymbols.load(self.path)


_AHEAD: dict[str, Reading] = {}  # read_ahead's, until taken
_AHEAD_LOCK = threading.Lock()


def read_ahead(path: str = KALLSYMS_PATH) -> None:
    """Start reading ``path`` now, for the next :func:`reading` of it: at
    launch, while the main thread imports what the first tick needs (~0.3 s),
    instead of from the collector's creation, when the table was still being
    read as the first tick came (it waited up to 0.16 s, the live view busy)."""
    with _AHEAD_LOCK:
        if path not in _AHEAD:
            _AHEAD[path] = Reading(path)


def reading(path: str = KALLSYMS_PATH) -> Reading:
    """The read :func:`read_ahead` started, taken (once), else one started now."""
    with _AHEAD_LOCK:
        found = _AHEAD.pop(path, None)
    return found if found is not None else Reading(path)


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


_HEX_DIGIT = np.full(256, 255, np.uint8)
for _digit, _char in enumerate(b"0123456789abcdef"):
    _HEX_DIGIT[_char] = _HEX_DIGIT[ord(chr(_char).upper())] = _digit
_TEXT_KINDS = np.frombuffer("".join(sorted(TEXT_TYPES)).encode(), np.uint8)
NAMES_AT_ONCE = 8192


def _fixed_width(data: bytes) -> KernelSymbols | None:
    """The table of a kallsyms file whose every line is ``ADDRESS TYPE NAME``
    (then ``\t[MODULE]`` or nothing) with one address width, as the kernel
    writes it, parsed as arrays: no Python object per line. None when a line
    is not so (the line-by-line parser then reads it)."""
    raw = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(raw == ord("\n"))
    width = data.find(b" ")
    if not len(ends) or ends[-1] != len(raw) - 1 or not 8 <= width <= 16:
        return None
    starts = np.concatenate(([0], ends[:-1] + 1))
    if ((ends - starts) < width + 4).any() or (raw[starts + width] != ord(" ")).any():
        return None
    if (raw[starts + width + 2] != ord(" ")).any():
        return None
    addresses = np.zeros(len(starts), np.uint64)
    for column in range(width):  # a digit of every line at a time: arrays of one value a line
        digit = _HEX_DIGIT[raw[starts + column]]
        if (digit == 255).any():
            return None
        addresses = addresses * np.uint64(16) + digit
    kinds = raw[starts + width + 1]
    name_at = starts + width + 3
    tabs = np.flatnonzero(raw == ord("\t"))
    tab = tabs[np.minimum(np.searchsorted(tabs, name_at), len(tabs) - 1)] if len(tabs) else ends
    name_end = np.where((tab >= name_at) & (tab < ends), tab, ends)  # a tab: a module follows
    text = np.isin(kinds, _TEXT_KINDS) & (addresses != 0)
    order = np.lexsort((kinds[text] >= ord("a"), addresses[text]))  # global first; stable
    rows = np.flatnonzero(text)[order]
    first = np.ones(len(rows), np.bool_)
    first[1:] = addresses[rows[1:]] != addresses[rows[:-1]]
    rows = rows[first]
    table = _from_rows(data, addresses[rows], name_at[rows], name_end[rows], ends[rows])
    if table is not None:
        table.hidden = not addresses.any()  # every address 0, of any type: kptr_restrict
    return table


def _from_rows(
    data: bytes, addresses: npt.NDArray[np.uint64], name_at: Ids, name_end: Ids, ends: Ids
) -> KernelSymbols | None:
    """The table of these lines (in address order, one an address): names
    gathered into one string without a Python object per name; modules read
    for module lines only."""
    lengths = name_end - name_at
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    raw, pieces = np.frombuffer(data, np.uint8), []
    firsts = offsets[:-1]  # where each name starts in the string made
    for at in range(0, len(lengths), NAMES_AT_ONCE):  # byte indices: 8 bytes a name's byte
        chunk = slice(at, at + NAMES_AT_ONCE)
        skip = np.repeat(name_at[chunk] - firsts[chunk], lengths[chunk])
        pieces.append(raw[skip + np.arange(firsts[at], firsts[at] + len(skip))].tobytes())
    names = b"".join(pieces)
    if not names.isascii():  # offsets count bytes: only where a byte is a character
        return None
    table = KernelSymbols(())
    table.error = None
    table._starts = array("Q", addresses.tobytes())
    table._name_at = array("Q", offsets.astype(np.uint64).tobytes())
    table._names = names.decode()
    module_ids: dict[str, int] = {KERNEL_MODULE: 0}
    modules = array("I", bytes(4 * len(addresses)))
    for at in np.flatnonzero(ends > name_end).tolist():  # a tab after the name
        part = data[int(name_end[at]) + 1 : int(ends[at])].strip()
        if part.startswith(b"[") and part.endswith(b"]"):
            modules[at] = module_ids.setdefault(part.decode(errors="replace"), len(module_ids))
    table._module_ids = modules
    table._module_names = list(module_ids)
    return table
