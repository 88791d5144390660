"""The .eh_frame walker's program and maps (bpf/unwind.bpf.c), seen from Python.

Owns :class:`Unwinder` (loads the walker, fills its maps, drains its stack
store) and the values it takes: :class:`CodeMapping` and :class:`TableSlot`.
Tables come in as packed rows (``symbols/unwind/table.py`` makes them; bpf/
imports nothing from symbols/: the row layout is the contract, 16 bytes, see
``struct unwind_row``). A file's rows are written once into the shared rows
array and used by every process that maps it. A process is described by its
executable mappings, sorted, each with its table's slot (or none yet: frame
pointers). Thread-safe: a worker thread feeds tables while the collector
drains.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes as ct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bpftop.bpf.batch import Drained, HashDrain
from bpftop.bpf.raw import Packed, WalkedStack

MODES = {"fp": 0, "dwarf": 1, "auto": 2}
ROW_SIZE = 16  # sizeof(struct unwind_row)
ROWS_PER_BUCKET = 4  # UNWIND_ROWS_PER_BUCKET
MAX_MAPPINGS = 256  # UNWIND_MAX_MAPPINGS
# Walker stack ids have this bit set; bpf_get_stackid's ids are below it.
WALKER_ID_BIT = 1 << 30
# struct ustack's flags (unwind.bpf.c).
USTACK_FP_FROM_MASK = 0xFF
USTACK_FP_END = 0x100


@dataclass(frozen=True, slots=True)
class RowIndex:
    """Buckets of ``1 << shift`` bytes of code from ``first_pc`` on; entry b
    (of ``buckets`` + 1) is the file's row in force at bucket b's first byte."""

    first_pc: int
    shift: int
    rows: tuple[int, ...]

    @property
    def buckets(self) -> int:
        return len(self.rows) - 1


@dataclass(frozen=True, slots=True)
class TableSlot:
    """Where one file's rows, and their index, are in the shared arrays."""

    start: int
    rows: int
    index_start: int = 0
    buckets: int = 0  # 0: no index (the walker searches all rows)
    first_pc: int = 0
    shift: int = 0


@dataclass(frozen=True, slots=True)
class UnwindState:
    """What the walker has and what it could not take, for the Diagnostics view.

    ``tables_refused``: files whose rows did not fit in ``unwind_rows``;
    ``mappings_dropped``: executable mappings past the first ``MAX_MAPPINGS``
    of a process (summed over processes); ``files_without_cfi``: files with
    no usable .eh_frame (or unreadable). Frames in those use frame pointers.
    ``processes``: processes described to the walker; ``processes_waiting``:
    sampled or followed ones whose tables are still being built;
    ``processes_over_limit``: sampled ones left to frame pointers (-a: past the
    feed's bound); ``fp_fallbacks``: (reason, samples) of BPF samples whose
    process had no tables in the walker, so frame pointers made their stack."""

    mode: str
    tables_loaded: int = 0
    rows_used: int = 0
    rows_max: int = 0
    index_used: int = 0
    index_max: int = 0
    tables_refused: int = 0
    mappings_dropped: int = 0
    files_without_cfi: int = 0
    processes: int = 0
    processes_waiting: int = 0
    processes_over_limit: int = 0
    fp_fallbacks: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class FeedState:
    """What the table feed reports to :meth:`Unwinder.state` (see UnwindState)."""

    processes_waiting: int = 0
    processes_over_limit: int = 0
    fp_fallbacks: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class CodeMapping:
    """One executable mapping of a process: ``[start, end)``, load bias
    (address - ELF vaddr) and the key of its table (None: none yet)."""

    start: int
    end: int
    bias: int
    table_key: str | None = None


class Unwinder:
    """The walker of one loaded program: tables, processes, stack store."""

    def __init__(self, bpf: Any, program_type: int, mode: str) -> None:
        self.mode = mode
        self._rows = bpf[b"unwind_rows"]
        self._index = bpf[b"unwind_index"]
        self._next_index = 0
        self._procs = bpf[b"unwind_procs"]
        self._stores = (bpf[b"ustacks0"], bpf[b"ustacks1"])
        self._drains = tuple(HashDrain(store) for store in self._stores)
        self._lock = threading.Lock()
        self._slots: dict[str, TableSlot] = {}
        self._next_row = 0
        self.capacity_rows = int(self._rows.max_entries)
        self._closed = False
        self._refused: set[str] = set()  # tables that did not fit
        self._without_cfi: set[str] = set()
        self._dropped: dict[int, int] = {}  # tgid -> mappings past MAX_MAPPINGS
        self._described: set[int] = set()  # tgids set_process wrote
        self.feed_state = FeedState()  # replaced whole by the feed
        self._bpf = bpf
        self._poll_lock = threading.Lock()  # held while the exec ring buffer is polled
        self._execs: list[int] = []
        bpf[b"unwind_execs"].open_ring_buffer(self._on_exec)
        walker = bpf.load_func(b"unwind_walk", program_type)
        bpf[b"unwind_progs"][ct.c_int(0)] = ct.c_int(walker.fd)
        bpf[b"unwind_mode"][ct.c_int(0)] = ct.c_uint32(MODES[mode])

    @property
    def rows_used(self) -> int:
        return self._next_row

    def has_table(self, key: str) -> bool:
        with self._lock:
            return key in self._slots

    def add_table(self, key: str, packed: bytes) -> TableSlot | None:
        """Write one file's rows (once per key); None when the array is full."""
        rows = len(packed) // ROW_SIZE
        with self._lock:
            found = self._slots.get(key)
            if found is not None or self._closed:
                return found
            if not rows or self._next_row + rows > self.capacity_rows:
                if rows:
                    self._refused.add(key)
                return None
            data = packed[: rows * ROW_SIZE]
            slot = TableSlot(self._next_row, rows, *self._place_index(row_index(data)))
            _write(self._rows, slot.start, (self._rows.Leaf * rows).from_buffer_copy(data))
            self._next_row += rows
            self._slots[key] = slot
            return slot

    def _place_index(self, index: RowIndex) -> tuple[int, int, int, int]:
        """Write an index into unwind_index: (start, buckets, first_pc, shift),
        or all 0 (no index: the walker searches all rows) when it is full."""
        size = len(index.rows)
        if self._next_index + size > int(self._index.max_entries):
            return (0, 0, 0, 0)
        start = self._next_index
        _write(self._index, start, (ct.c_uint32 * size)(*index.rows))
        self._next_index += size
        return (start, index.buckets, index.first_pc, index.shift)

    def set_process(self, tgid: int, mappings: Sequence[CodeMapping]) -> int:
        """Describe ``tgid``'s code to the walker; returns mappings with a table."""
        ordered = sorted(mappings, key=lambda m: m.start)[:MAX_MAPPINGS]
        self._dropped[tgid] = len(mappings) - len(ordered)
        leaf = self._procs.Leaf()
        leaf.count = len(ordered)
        with_table = 0
        with self._lock:
            if self._closed:
                return 0
            for i, mapping in enumerate(ordered):
                entry = leaf.maps[i]
                entry.start, entry.end, entry.bias = mapping.start, mapping.end, mapping.bias
                slot = self._slots.get(mapping.table_key or "")
                if slot is not None:
                    entry.rows_start, entry.rows_len = slot.start, slot.rows
                    entry.index_start, entry.buckets = slot.index_start, slot.buckets
                    entry.first_pc, entry.shift = slot.first_pc, slot.shift
                    with_table += 1
            self._procs[ct.c_uint32(tgid)] = leaf
            self._described.add(tgid)
        return with_table

    def forget_process(self, tgid: int) -> None:
        """Drop ``tgid``'s entry (it is gone, or a thread given one at a fork)."""
        with self._lock:
            self._dropped.pop(tgid, None)
            self._described.discard(tgid)
            if self._closed:
                return
            with contextlib.suppress(KeyError):
                del self._procs[ct.c_uint32(tgid)]

    def process_mappings(self, tgid: int) -> list[tuple[int, int, int]]:
        """(start, end, rows) of each mapping the walker knows for ``tgid``."""
        try:
            leaf = self._procs[ct.c_uint32(tgid)]
        except KeyError:
            return []
        maps = leaf.maps[: min(int(leaf.count), MAX_MAPPINGS)]
        return [(int(m.start), int(m.end), int(m.rows_len)) for m in maps]

    def note_without_cfi(self, key: str) -> None:
        """A file of a profiled process has no unwind table (no usable .eh_frame)."""
        with self._lock:
            self._without_cfi.add(key)

    def state(self) -> UnwindState:
        with self._lock:
            return UnwindState(
                mode=self.mode, tables_loaded=len(self._slots), rows_used=self._next_row,
                rows_max=self.capacity_rows, index_used=self._next_index,
                index_max=int(self._index.max_entries), tables_refused=len(self._refused),
                mappings_dropped=sum(self._dropped.values()),
                files_without_cfi=len(self._without_cfi), processes=len(self._described),
                processes_waiting=self.feed_state.processes_waiting,
                processes_over_limit=self.feed_state.processes_over_limit,
                fp_fallbacks=self.feed_state.fp_fallbacks,
            )  # fmt: skip

    def wait_execs(self, timeout_s: float) -> tuple[int, ...] | None:
        """Wait up to ``timeout_s`` for processes that exec'd while described
        (the kernel dropped their entries): their tgids, () when none did,
        None once closed. One thread at a time polls."""
        with self._poll_lock:
            if self._closed:
                return None
            self._bpf.ring_buffer_poll(max(0, int(timeout_s * 1000)))
            found, self._execs = tuple(self._execs), []
        return found

    def _on_exec(self, _ctx: Any, data: Any, _size: int) -> int:
        self._execs.append(ct.cast(data, ct.POINTER(ct.c_uint32)).contents.value)
        return 0

    def close(self) -> None:
        """From now on, write nothing (the program's maps are about to go); a
        poll of :meth:`wait_execs` in progress ends first."""
        with self._lock:
            self._closed = True
        with self._poll_lock:
            pass

    def take_stacks(self, generation: int) -> dict[int, WalkedStack]:
        """Every walked stack of an inactive generation, removed from the store."""
        return _stacks(self._drains[generation].drain(), self._stores[generation].Leaf)

    def preallocated_bytes(self) -> int:
        """Bytes of the rows and index arrays (BPF arrays are allocated whole)."""
        return self.capacity_rows * ROW_SIZE + int(self._index.max_entries) * 4

    def memory_bytes(self) -> int:
        """Bytes of table rows and their indexes written plus process entries in use."""
        procs = sum(1 for _ in self._procs)
        rows = self._next_row * ROW_SIZE + self._next_index * 4
        return rows + procs * ct.sizeof(self._procs.Leaf)


def row_index(packed: bytes) -> RowIndex:
    """The bucket index of one file's packed rows (sorted by pc): the fewest
    bucket bytes (a power of two) that need at most one bucket per
    ROWS_PER_BUCKET rows."""
    pcs = memoryview(packed).cast("I")[::4].tolist()  # each row starts with its u32 pc
    first, span = pcs[0], pcs[-1] - pcs[0]
    budget = max(1, len(pcs) // ROWS_PER_BUCKET)
    shift = 0
    while (span >> shift) + 1 > budget:
        shift += 1
    starts = [first + (b << shift) for b in range((span >> shift) + 2)]
    rows = (max(0, bisect.bisect_right(pcs, start) - 1) for start in starts)
    return RowIndex(first, shift, tuple(rows))


def _write(array: Any, start: int, values: Any) -> None:
    """Write consecutive entries of a BPF array from ``start`` in one batch."""
    keys = (ct.c_uint32 * len(values))(*range(start, start + len(values)))
    array.items_update_batch(keys, values)


def _stacks(drained: Drained, leaf: Any) -> dict[int, WalkedStack]:
    """Stack id -> its stack, from a drained store (u32 keys, ``struct ustack``
    values): the addresses packed (the bytes of the value's words in use, a
    slice each, no int object per address: the collector makes those for new
    stacks only) and what the walk's flags say."""
    ids = memoryview(drained.keys).cast("I").tolist()
    values = drained.values
    halves = memoryview(values).cast("I")
    size = ct.sizeof(leaf)
    len_at, flags_at, addrs_at = leaf.len.offset // 4, leaf.flags.offset // 4, leaf.addrs.offset
    depth = leaf.addrs.size // 8
    stacks: dict[int, WalkedStack] = {}
    for i, stack_id in enumerate(ids):
        first, word = i * size + addrs_at, i * size // 4
        packed = values[first : first + 8 * min(halves[word + len_at], depth)]
        flags = halves[word + flags_at]
        stacks[stack_id] = walked_stack(packed, flags) if flags else WalkedStack(packed)
    return stacks


def walked_stack(packed: Packed, flags: int) -> WalkedStack:
    """A walked stack with its ``struct ustack`` flags read (unwind.bpf.c:
    the low byte is 1 + the first frame stepped by frame pointer in code the
    walker had no mapping of, USTACK_FP_END the last step's kind)."""
    return WalkedStack(packed, (flags & USTACK_FP_FROM_MASK) - 1, bool(flags & USTACK_FP_END))
