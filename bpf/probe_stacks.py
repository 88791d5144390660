"""Probe stacks from the .eh_frame walker: its copies per program type and the
weighted probes' walked stacks.

A tail call reaches only a program of the caller's type (a BPF_PROG_ARRAY
belongs to the type of the first program loaded with it; the kernel refuses
another type's caller with EINVAL, and refuses to store another type's
program in it), so the walker of ``unwind.bpf.c`` is loaded once per program
type that calls it: ``unwind_walk`` for perf events (by
:class:`~bpftop.bpf.unwinder.Unwinder`), ``unwind_walk_kp`` for kprobe-type
programs (uprobes, uretprobes, USDT, kprobes) and ``unwind_walk_tp`` for
tracepoints (``on_tracepoint``, offcpu's ``sched_switch``), each in its own
array and under its own name; the copies are made from ``unwind_walk``'s
instructions (bpf/retarget.py), not compiled apart.

Owns :func:`load_probe_walker` (through bpf/probe_copies.py),
:func:`read_walked` (the weighted probes' walked stacks, kept run-long per
handler slot in ``uwstacks0/1``, read by id), :func:`weighted_samples` (one
drain of the weighted counts, with their native, walked and Python stacks),
:func:`clear_weighted` (a retired slot's run-long stores) and
:func:`walked_share` (how many samples of a drain the walker made).
"""

from __future__ import annotations

import ctypes as ct
from collections.abc import Iterable
from functools import partial
from typing import Any

from bpftop.bpf.maps_io import MapDrains, StackReader, clear_stacks
from bpftop.bpf.probes import ProgramType
from bpftop.bpf.python_walk import PythonWalker, load_copy
from bpftop.bpf.raw import RawSample, WalkedStack
from bpftop.bpf.retarget import load_walker_copy
from bpftop.bpf.unwinder import WALKER_ID_BIT, walked_stack

# (function, its prog array, BCC's program type attribute)
KPROBE_WALKER = (b"unwind_walk_kp", b"unwind_progs_kp", "KPROBE")
TRACEPOINT_WALKER = (b"unwind_walk_tp", b"unwind_progs_tp", "TRACEPOINT")
PROBE_WALKERS = (KPROBE_WALKER, TRACEPOINT_WALKER)
_WALKER_OF = {ProgramType.KPROBE: KPROBE_WALKER, ProgramType.TRACEPOINT: TRACEPOINT_WALKER}
"""The walker copy a program type's handlers tail-call (perf events call the walker itself)."""


def load_probe_walker(bpf: Any, program_types: Any, program: ProgramType) -> bool:
    """Make sure the walker copy that handlers of ``program`` type tail-call is
    loaded and in its array (``program_types``: ``bcc.BPF``, whose attributes
    name the types): at a probe's first use, or ahead on a thread
    (bpf/probe_copies.py). Until it is there, the handlers' tail call fails
    and they use ``bpf_get_stackid``. Returns True when it was loaded now."""
    return load_copy(
        bpf, program_types, _WALKER_OF.get(program), partial(load_walker_copy, bpf, program_types)
    )


def weighted_store(slot: int) -> bytes:
    """The run-long store of the walked stacks of handler slot ``slot``."""
    return b"uwstacks1" if slot else b"uwstacks0"


def is_walked(stack_id: int) -> bool:
    """True for a stack id of the walker's stores (get_stackid's are below the bit)."""
    return stack_id >= 0 and bool(stack_id & WALKER_ID_BIT)


def read_walked(table: Any, stack_ids: Iterable[int]) -> dict[int, WalkedStack]:
    """The walked stacks of ``stack_ids`` found in ``table`` (a ``uwstacks`` map),
    packed. They stay there: an offcpu entry may still refer to them."""
    found: dict[int, WalkedStack] = {}
    for stack_id in {s for s in stack_ids if is_walked(s)}:
        try:
            leaf = table[ct.c_uint32(stack_id)]
        except KeyError:
            continue
        packed = bytes(leaf.addrs)[: 8 * min(int(leaf.len), len(leaf.addrs))]
        found[stack_id] = walked_stack(packed, int(leaf.flags))
    return found


def walked_share(counted: Iterable[tuple[int, int]]) -> int:
    """Of (user stack id, samples) pairs, the samples whose stack the walker made."""
    return sum(n for stack_id, n in counted if is_walked(stack_id))


def native_store(slot: int) -> bytes:
    """The run-long ``get_stackid`` store of the weighted probes of handler slot ``slot``."""
    return b"wstacks_1" if slot else b"wstacks"


def weighted_samples(
    bpf: Any,
    drains: MapDrains,
    generation: int,
    slot: int,
    walker: bool,
    python: PythonWalker | None,
) -> tuple[tuple[RawSample, ...], list[tuple[Any, Any]]]:
    """Drain ``wcounts{generation}`` (counted by handler slot ``slot``): its
    samples and its raw entries. ``walker``: the .eh_frame walker is loaded."""
    weighted = drains.entries(f"wcounts{generation}")
    if not weighted:
        return (), weighted
    ids = [key.user_stack_id for key, _ in weighted]
    walked = read_walked(bpf[weighted_store(slot)], ids) if walker else {}
    py_ids = (key.python_stack_id for key, _ in weighted)
    pystacks = python.read_weighted(slot, py_ids) if python is not None else {}
    stacks = StackReader(bpf[native_store(slot)], walked, pystacks)
    return tuple(stacks.weighted(key, value) for key, value in weighted), weighted


def clear_weighted(bpf: Any, slot: int, walker: bool, python: PythonWalker | None) -> None:
    """Empty handler slot ``slot``'s run-long stores (its probe is detached)."""
    clear_stacks(bpf[native_store(slot)])
    if walker:
        clear_stacks(bpf[weighted_store(slot)])
    if python is not None:
        clear_stacks(python.weighted_store(slot))
