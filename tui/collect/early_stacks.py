"""The user stacks of early (perf_event) samples: walked in user space when possible.

Owns :class:`EarlyStacks`. An early sample carries the kernel's frame-pointer
chain and, beside it, the user registers and a copy of the top of the user
stack (what ``perf record --call-graph dwarf`` copies). The copy is walked
with the process's .eh_frame tables (:func:`~bpftop.symbols.stack_walk.walk_copied_stack`,
the same rules as the in-kernel walker), so early stacks of binaries without
frame pointers are as complete as BPF's. The tables are built or loaded from
the disk cache on a thread of their own, for the targets given at the start;
a walk that meets a file not tried yet loads (or builds) that file's table at
once and walks again; when a walk does not reach the end of the stack, the
frame-pointer chain is used, and the sample's quality says which.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from bpftop.bpf.perf_events import PerfSample
from bpftop.bpf.raw import Addresses
from bpftop.symbols.process_tables import ProcessTables
from bpftop.symbols.stack_walk import TableLookup, UserRegs, walk_copied_stack
from bpftop.tui.collect.niceness import lower_priority

EARLY_FP = "perf_event, frame pointers"
EARLY_WALKED = "perf_event, .eh_frame walk in user space"


class EarlyStacks:
    """Decides each early sample's user stack; builds the targets' tables meanwhile."""

    def __init__(self, targets: Iterable[int], tables: ProcessTables | None = None) -> None:
        self.tables = tables if tables is not None else ProcessTables()
        self._lookups: dict[int, TableLookup] = {}
        self._stop = threading.Event()
        pids = tuple(targets)
        self._builder = threading.Thread(
            target=self._build, args=(pids,), name="bpftop-early-tables", daemon=True
        )
        if pids:
            self._builder.start()

    def user_stack(self, sample: PerfSample) -> tuple[Addresses, str]:
        """The walked stack when the walk reaches the stack's end, else the chain."""
        if sample.regs is None or not sample.stack_bytes:
            return sample.user_stack, EARLY_FP
        lookup = self._lookups.get(sample.tgid)
        if lookup is None:
            lookup = self._lookups[sample.tgid] = self.tables.lookup_for(sample.tgid)
        regs = UserRegs(sample.regs.ip, sample.regs.sp, sample.regs.bp)
        walked = walk_copied_stack(regs, sample.stack_bytes, lookup)
        if not walked.complete and self.tables.load_at(sample.tgid, walked.addresses):
            # The walk met a file whose table the builder (niced, on a busy
            # machine: seconds late) has not reached: load it now (the disk
            # cache: milliseconds; cold: the same build, just earlier) and walk again.
            walked = walk_copied_stack(regs, sample.stack_bytes, lookup)
        if walked.complete:
            return walked.addresses, EARLY_WALKED
        return sample.user_stack, EARLY_FP

    def _build(self, pids: tuple[int, ...]) -> None:
        lower_priority()  # a cold build takes seconds of CPU the target needs (see niceness)
        for pid in pids:
            if self._stop.is_set():
                return
            self.tables.build_missing(pid, stop=self._stop.is_set)

    def close(self) -> None:
        """Stop building (a table being built finishes first; not waited for)."""
        self._stop.set()
