"""The user stacks of early (perf_event) samples: walked in user space, once the tables are in.

Owns :class:`EarlyStacks`. An early sample carries the kernel's frame-pointer
chain and, beside it, the user registers and a copy of the top of the user
stack (what ``perf record --call-graph dwarf`` copies). The copy is walked
with the process's .eh_frame tables (:func:`~bpftop.symbols.unwind.stack_walk.walk_copied_stack`,
the same rules as the in-kernel walker), so early stacks of binaries without
frame pointers are as complete as BPF's. The tables are built or loaded from
the disk cache on a thread of their own, for the targets given at the start
and for every other process a sample names. A sample of a process whose
tables are not all in yet is not walked: :meth:`EarlyStacks.user_stack` says
to ask again later (its copy is kept), so the result never depends on a race
between the first samples and the tables. Where the walk does not reach the
end of the stack (no CFI for a file, JIT code), the frame-pointer chain is
used, as the kernel's walker does, and the sample's quality says which.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from bpftop.bpf.perf_events import PerfSample
from bpftop.bpf.raw import Addresses
from bpftop.symbols.unwind.process_tables import ProcessTables
from bpftop.symbols.unwind.stack_walk import TableLookup, UserRegs, walk_copied_stack

EARLY_FP = "perf_event, frame pointers"
EARLY_WALKED = "perf_event, .eh_frame walk in user space"
MAX_PROCESSES = 256  # processes tables are built for (-a), as the unwind feed's limit


class EarlyStacks:
    """Decides each early sample's user stack; builds the tables it needs meanwhile."""

    def __init__(self, targets: Iterable[int], tables: ProcessTables | None = None) -> None:
        self.tables = tables if tables is not None else ProcessTables()
        self._lookups: dict[int, TableLookup] = {}
        self._settled: set[int] = set()  # processes whose every file has been tried
        self._wanted: list[int] = list(targets)  # processes to build for, in order
        self._asked: set[int] = set(self._wanted)
        self._ready = threading.Condition()
        self._stop = False
        self._builder = threading.Thread(
            target=self._build, name="bpftop-early-tables", daemon=True
        )
        self._builder.start()

    def user_stack(self, sample: PerfSample, final: bool = False) -> tuple[Addresses, str] | None:
        """The walked stack when the walk reaches the stack's end, else the
        chain; None while the process's tables are still being built (ask
        again later). ``final``: no later; walk with the tables there are."""
        if sample.regs is None or not sample.stack_bytes:
            return sample.user_stack, EARLY_FP
        tgid = sample.tgid
        lookup = self._lookups.get(tgid)
        if lookup is None:  # reads its maps now, while it surely runs
            lookup = self._lookups[tgid] = self.tables.lookup_for(tgid)
        if not final and not self.settled(tgid):
            return None
        regs = UserRegs(sample.regs.ip, sample.regs.sp, sample.regs.bp)
        walked = walk_copied_stack(regs, sample.stack_bytes, lookup)
        if walked.complete:
            return walked.addresses, EARLY_WALKED
        return sample.user_stack, EARLY_FP

    def reread(self, tgid: int) -> None:
        """``tgid`` exec'd: read its new image's maps now; its samples are
        walked with them once the tables of the files it maps now are in."""
        self.tables.forget(tgid)
        self._settled.discard(tgid)
        self._asked.discard(tgid)
        self._lookups[tgid] = self.tables.lookup_for(tgid)

    def settled(self, tgid: int) -> bool:
        """Every file ``tgid`` maps has had its table built or tried (asks for
        the missing ones to be built when not); true of processes past the
        first MAX_PROCESSES asked for, which are walked with the tables there are."""
        if tgid in self._settled:
            return True
        if not self.tables.missing(tgid):
            self._settled.add(tgid)
            return True
        if tgid not in self._asked:
            if len(self._asked) >= MAX_PROCESSES:  # as BPF's walker: frame pointers past it
                self._settled.add(tgid)
                return True
            with self._ready:
                self._asked.add(tgid)
                self._wanted.append(tgid)
                self._ready.notify()
        return False

    def _build(self) -> None:
        # At the process's priority: samples wait for these tables (lowered, on
        # a VM at load 4, libc's 0.05 CPU-s build took over a second).
        while True:
            with self._ready:
                while not self._wanted and not self._stop:
                    self._ready.wait()
                if self._stop:
                    return
                pid = self._wanted.pop(0)
            self.tables.build_missing(pid, stop=lambda: self._stop)

    def close(self) -> None:
        """Stop building (a table being built finishes first; not waited for)."""
        with self._ready:
            self._stop = True
            self._ready.notify()
