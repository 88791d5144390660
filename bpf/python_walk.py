"""The Python frame walker's program and maps (bpf/python.bpf.c), seen from Python.

Owns :class:`PythonWalker` (loads ``python_walk`` into its tail-call slot,
``python_walk_kp`` for uprobes, USDT and kprobes and ``python_walk_tp`` for
tracepoints and offcpu through bpf/probe_copies.py; describes Python processes to the
kernel, drains the Python stack store, reads offcpu's run-long one) and
the values it takes and gives: :class:`PythonProcess` (what the kernel needs
per process: where the thread's state is, and the layout of the
interpreter's thread state, frames and code objects) and
:class:`PythonStack` (one walked stack: ``(code address, instruction index,
is_entry)`` innermost first, and whether its root end was cut).
bpf/ imports nothing from symbols/: user space finds the addresses and the
layout (``tui/collect/python_procs.py``) and names the code objects.
"""

from __future__ import annotations

import contextlib
import ctypes as ct
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from bpftop.bpf.batch import HashDrain
from bpftop.bpf.btf import member_offset
from bpftop.bpf.probes import ProgramType
from bpftop.bpf.raw import RawPyFrame

PY_ID_BIT = 1 << 30  # python.bpf.c's PY_ID_BIT: ids of the Python stack store
MAX_FRAMES = 128  # PY_MAX_FRAMES
_KPROBE_COPY = (b"python_walk_kp", b"python_progs_kp", "KPROBE")
_TRACEPOINT_COPY = (b"python_walk_tp", b"python_progs_tp", "TRACEPOINT")
_COPY_OF = {ProgramType.KPROBE: _KPROBE_COPY, ProgramType.TRACEPOINT: _TRACEPOINT_COPY}
"""The Python walker's copy a program type's handlers tail-call (perf events
call the walker itself). A probe kind whose stacks get no Python frames
(``KindRule.python``: uretprobe latency) never asks for one."""
COUNT_NAMES = ("walked", "truncated", "no_frame", "read_errors", "no_gil")  # PY_COUNT_* order
_HEAD = struct.Struct("<QII")  # struct pystack: hash, len, truncated
_FRAME = struct.Struct("<QiIQ")  # struct pyframe: code, instr, entry, ident


@dataclass(frozen=True, slots=True)
class PythonProcess:
    """python.bpf.c's ``struct python_proc``, field for field (its comments say
    what each is): where the thread's own state is (``tss_key_addr``, the
    address of the gilstate ``autoTSSkey``, or 0 and the thread-local's
    ``tls_module``/``tls_offset``), the GIL's holder and locked flag, and
    offsets and word indices into the walker's 80-byte reads of a frame and of
    a code object."""

    tss_key_addr: int
    tls_offset: int
    gil_holder: int
    gil_locked: int
    tls_module: int
    tstate_cframe: int
    current_frame: int
    frame_window: int
    frame_code: int
    frame_previous: int
    frame_instr: int
    frame_entry: int
    entry_owner: int
    code_tag_bits: int
    code_bytecode: int
    ident_base: int
    ident_firstlineno: int
    ident_filename: int
    ident_qualname: int


@dataclass(frozen=True, slots=True)
class PythonStack:
    """One walked Python stack, innermost frame first."""

    frames: tuple[RawPyFrame, ...]
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class PythonCounts:
    """Samples since load: with Python frames, cut at MAX_FRAMES, of a
    described process's thread without a frame, walks stopped by a failed read,
    not taken (--gil) because the thread did not hold the GIL."""

    walked: int = 0
    truncated: int = 0
    no_frame: int = 0
    read_errors: int = 0
    no_gil: int = 0


class PythonWalker:
    """The Python walker of one loaded program. Thread-safe."""

    def __init__(self, bpf: Any, program_type: int) -> None:
        self._procs = bpf[b"python_procs"]
        self._counts = bpf[b"python_counts"]
        self._stores = (bpf[b"pystacks0"], bpf[b"pystacks1"])
        self._drains = tuple(HashDrain(store) for store in self._stores)
        self._value_size = ct.sizeof(self._stores[0].Leaf)
        self._lock = threading.Lock()
        fsbase = member_offset("task_struct", "thread", "fsbase")
        self.fsbase_offset = fsbase  # None: no BTF, Python frames cannot be walked
        walker = bpf.load_func(b"python_walk", program_type)
        bpf[b"python_progs"][ct.c_int(0)] = ct.c_int(walker.fd)
        self._bpf = bpf
        self._described: set[int] = set()

    def read_weighted(self, slot: int, stack_ids: Iterable[int]) -> dict[int, PythonStack]:
        """offcpu's Python stacks of ``stack_ids`` in handler slot ``slot``'s
        run-long store. They stay there: a blocked thread's entry may still
        name them (``clear_weighted`` empties the store of a retired slot)."""
        store, found = self._bpf[_weighted_store(slot)], {}
        for stack_id in {s for s in stack_ids if s > 0}:
            try:
                leaf = store[ct.c_uint32(stack_id)]
            except KeyError:
                continue
            found[stack_id] = _stack(bytes(leaf), 0)
        return found

    def weighted_store(self, slot: int) -> Any:
        """The run-long store of handler slot ``slot`` (to empty it when retired)."""
        return self._bpf[_weighted_store(slot)]

    @property
    def usable(self) -> bool:
        return self.fsbase_offset is not None

    def describe(self, pid: int, process: PythonProcess) -> bool:
        """Walk ``pid``'s Python frames from now on (False: not possible here)."""
        if self.fsbase_offset is None:
            return False
        leaf = self._procs.Leaf()
        for name in PythonProcess.__slots__:
            setattr(leaf, name, getattr(process, name))
        leaf.fsbase_off = self.fsbase_offset
        with self._lock:
            try:
                self._procs[ct.c_uint32(pid)] = leaf
            except Exception:  # BCC raises a bare Exception when the map is full
                return False
            self._described.add(pid)
        return True

    def forget(self, pid: int) -> None:
        """Drop ``pid``'s entry: described here, or copied from its parent's at a fork."""
        with self._lock:
            self._described.discard(pid)
            with contextlib.suppress(KeyError):
                del self._procs[ct.c_uint32(pid)]

    @property
    def described(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._described)

    def take_stacks(self, generation: int) -> dict[int, PythonStack]:
        """Every Python stack of an inactive generation, removed from the store."""
        drained = self._drains[generation].drain()
        ids = struct.unpack(f"<{drained.count}I", drained.keys) if drained.count else ()
        size, stacks = self._value_size, {}
        for i, stack_id in enumerate(ids):
            stacks[stack_id] = _stack(drained.values, i * size)
        return stacks

    def counts(self) -> PythonCounts:
        values = [int(self._counts.sum(ct.c_int(i)).value) for i in range(len(COUNT_NAMES))]
        return PythonCounts(*values)


def load_probe_copy(bpf: Any, program_types: Any, program: ProgramType) -> bool:
    """Load the Python walker's copy that handlers of ``program`` type tail-call
    (a tail call stays within its program type): ``python_walk_kp`` for
    uprobes, USDT probes and kprobes, ``python_walk_tp`` for tracepoints and offcpu
    (``program_types``: ``bcc.BPF``, whose attributes name the types): at the
    first such probe, or ahead on a thread (bpf/probe_copies.py). Until one is
    loaded its probes have native frames only. True when loaded now."""
    return load_copy(bpf, program_types, _COPY_OF.get(program))


def load_copy(
    bpf: Any,
    program_types: Any,
    copy: tuple[bytes, bytes, str] | None,
    load: Callable[[bytes, bytes, str], Any] | None = None,
) -> bool:
    """Load ``copy`` (a walker's function, the program array its handlers
    tail-call, the program type's name in ``program_types``) unless it is
    loaded already, and put it in the array's slot 0. ``load`` makes the
    loaded function from those three (default: BCC's ``load_func`` of the
    compiled one). True when loaded now."""
    if copy is None or copy[0] in bpf.funcs:
        return False
    name, array, program_type = copy
    if load is None:
        walker = bpf.load_func(name, getattr(program_types, program_type))
    else:
        walker = load(name, array, program_type)
    bpf[array][ct.c_int(0)] = ct.c_int(walker.fd)
    return True


def _weighted_store(slot: int) -> bytes:
    return b"pywstacks1" if slot else b"pywstacks0"


def _stack(values: bytes, at: int) -> PythonStack:
    _hash, length, truncated = _HEAD.unpack_from(values, at)
    start = at + _HEAD.size
    frames = tuple(
        (code, instr, bool(entry), ident)
        for code, instr, entry, ident in _FRAME.iter_unpack(
            values[start : start + _FRAME.size * min(length, MAX_FRAMES)]
        )
    )
    return PythonStack(frames, bool(truncated))
