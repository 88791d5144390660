"""Usage of every BPF map of the loaded program, for the Diagnostics view.

``map_usage`` lists each map of bpftop.bpf.c, unwind.bpf.c and python.bpf.c (``ALL_MAPS``)
with its type, entries used vs. max and key/value sizes: the per-tick sample
and stack maps as of their generation's last drain, the walker's rows and
index as written, small hash maps walked, other arrays full by nature.
"""

from __future__ import annotations

import ctypes as ct
from collections.abc import Callable, Mapping
from typing import Any

from bpftop.bpf.raw import MapUsage
from bpftop.bpf.unwinder import UnwindState

_MAP_KINDS = {
    1: "hash", 2: "array", 3: "prog_array", 4: "perf_event_array", 6: "percpu_array",
    7: "stack_trace", 27: "ringbuf",
}  # fmt: skip
ALL_MAPS = (
    "targets", "control", "counts0", "counts1", "stacks0", "stacks1", "drops", "events",
    "wcounts0", "wcounts1", "wstacks", "wstacks_1", "calls", "blocked", "exec_counts",
    "loader_holds", "unwind_mode", "unwind_rows", "unwind_index", "unwind_procs", "unwind_scratch",
    "ustacks0", "ustacks1", "uwstacks0", "uwstacks1", "unwind_progs", "unwind_progs_kp",
    "unwind_progs_tp", "unwind_execs",
    "python_procs", "python_scratch", "python_counts", "pystacks0", "pystacks1", "pywstacks0",
    "pywstacks1", "python_progs", "python_progs_kp", "python_progs_tp",
)  # fmt: skip
"""Every map of bpftop.bpf.c, unwind.bpf.c and python.bpf.c, in the order they are declared."""
_SLOT_ARRAYS = frozenset({"unwind_rows", "unwind_index"})
"""Arrays filled from the start: their used slots are what the walker wrote."""
_WALKED_MAPS = frozenset({
    "targets", "calls", "blocked", "exec_counts", "loader_holds", "unwind_procs", "wstacks",
    "wstacks_1", "uwstacks0", "uwstacks1", "python_procs", "pywstacks0", "pywstacks1",
})  # fmt: skip
"""Maps not drained per tick, counted by walking them (small, or empty when unused)."""


def map_usage(
    bpf: Any,
    drained: Mapping[str, int],
    unwind: UnwindState | None,
    entries: Callable[[str], int],
) -> tuple[MapUsage, ...]:
    """Every map of ``bpf`` that exists (the walker's only when it was appended).
    ``drained``: entries per map at its last drain; ``entries`` walks a map."""
    usage = []
    for name in ALL_MAPS:
        try:
            table = bpf[name.encode()]
        except KeyError:
            continue
        kind = _MAP_KINDS.get(int(table.ttype), str(table.ttype))
        if name in _SLOT_ARRAYS:
            rows = name == "unwind_rows"
            used = 0 if unwind is None else unwind.rows_used if rows else unwind.index_used
        elif name in drained:
            used = drained[name]
        elif name in _WALKED_MAPS:
            used = entries(name)
        else:
            used = int(table.max_entries) if kind.endswith("array") else 0
        usage.append(
            MapUsage(
                name=name, kind=kind, used=used, max_entries=int(table.max_entries),
                key_size=ct.sizeof(table.Key), value_size=ct.sizeof(table.Leaf),
                slots_used=name in _SLOT_ARRAYS,
            )
        )  # fmt: skip
    return tuple(usage)
