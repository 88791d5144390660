"""Every BPF map of the loaded program, and the walker's state, as the
Diagnostics view gets them (real kernel, root)."""

from __future__ import annotations

import os

from bpftop.bpf.map_usage import ALL_MAPS
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.unwinder import MAX_MAPPINGS, ROW_SIZE, CodeMapping


def test_every_map_is_listed_with_the_walkers_rows_and_what_it_could_not_take() -> None:
    with CpuSampler(99, unwind="auto", unwind_rows=4096) as sampler:
        sampler.load()
        unwinder = sampler.unwinder
        assert unwinder is not None
        assert unwinder.add_table("small", b"\0" * ROW_SIZE * 100) is not None
        assert unwinder.add_table("huge", b"\0" * ROW_SIZE * 5000) is None, "does not fit"
        mappings = [CodeMapping(0x1000 * (i + 1), 0x1000 * (i + 1) + 0x800, 0) for i in range(300)]
        unwinder.set_process(os.getpid(), mappings)
        unwinder.note_without_cfi("no-eh-frame")
        usage = {m.name: m for m in sampler.map_usage()}
        state = sampler.unwind_state()
    assert tuple(usage) == ALL_MAPS, "every map of the three files, in declaration order"
    assert usage["python_progs"].kind == "prog_array" and usage["pystacks0"].kind == "hash"
    rows = usage["unwind_rows"]
    assert (rows.used, rows.max_entries, rows.slots_used) == (100, 4096, True)
    assert usage["unwind_procs"].used == 1 and usage["counts0"].kind == "hash"
    assert usage["unwind_progs"].kind == "prog_array"
    assert state is not None
    assert (state.tables_loaded, state.rows_used, state.tables_refused) == (1, 100, 1)
    assert state.mappings_dropped == 300 - MAX_MAPPINGS and state.files_without_cfi == 1


def test_frame_pointers_only_has_no_walker_state() -> None:
    with CpuSampler(99, unwind="fp") as sampler:
        sampler.load()
        names = [m.name for m in sampler.map_usage()]
        assert sampler.unwind_state() is None
    assert "counts1" in names and "wstacks_1" in names and "blocked" in names
