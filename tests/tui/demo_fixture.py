"""A deterministic profile with live facts, for the Pilot tests and the two
screenshots a saved profile cannot show (Diagnostics, Threads).

The process is the bundled demo workload (build/workloads/demo: threads "demo"
and "compressor"); the stacks are made up around its functions (serve ->
handle_request -> hash_payload -> mix_round ...) plus a write() into the
kernel, an unresolved library frame, an inline frame and a recursive function.
The live facts (threads, unknown-frame shares, maps, walker state, overhead)
are synthetic numbers, but every reason and hint is made by the program's own
code and every map name is one of its maps. Pure Python, no Textual.
"""

from __future__ import annotations

from bpftop.symbols.frame import Frame, Unresolved
from bpftop.symbols.hints import Hints, hint
from bpftop.tui.collect.stacks import unknown_shares
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import (
    CollectionStats,
    MapUsage,
    Overhead,
    Phase,
    ProcessInfo,
    Snapshot,
    ThreadShare,
    UnwindState,
)

DEMO = "/opt/demo/bin/demo"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
CODEC = "/opt/demo/lib/libcodec.so.1"
"""A stripped library no Debian package owns (its hint: rebuild it without stripping)."""


SOURCE_LINES = {
    "main": 88,
    "serve": 140,
    "handle_request": 212,
    "hash_payload": 57,
    "mix_round": 31,
    "parse_headers": 12,
    "send_response": 301,
    "walk_tree": 19,
    "visit": 44,
}
SOURCE_FILES = {"parse_headers": "http.c", "send_response": "http.c", "walk_tree": "tree.c",
                "visit": "tree.c", "hash_payload": "hash.c", "mix_round": "hash.c"}  # fmt: skip


def _u(name: str, module: str = DEMO) -> Frame:
    line = SOURCE_LINES.get(name) if module == DEMO else None
    file = f"/src/demo/{SOURCE_FILES.get(name, 'main.c')}" if line else None
    return Frame(name, module, 0x10, file=file, line=line, inlined=name == "rotate_left")


def _k(name: str) -> Frame:
    return Frame(name, "[kernel]", 0x20, kernel=True)


_BASE = (_u("_start"), _u("__libc_start_main", LIBC), _u("main"), _u("serve"))
_REQ = (*_BASE, _u("handle_request"))
_SYSCALL = (_k("entry_SYSCALL_64_after_hwframe"), _k("do_syscall_64"))

STACKS: tuple[tuple[tuple[Frame, ...], int], ...] = (
    ((*_REQ, _u("hash_payload"), _u("mix_round")), 4210),
    ((*_REQ, _u("hash_payload"), _u("mix_round"), _u("rotate_left")), 1175),
    ((*_REQ, _u("hash_payload")), 640),
    ((*_REQ, _u("hash_payload"), _u("memcpy", LIBC)), 388),
    ((*_REQ, _u("parse_headers"), _u("strchr", LIBC)), 912),
    ((*_REQ, _u("parse_headers")), 301),
    ((*_REQ, _u("compress_body"), Frame(None, CODEC, 0x1A2B, reason=Unresolved.NO_SYMBOLS)), 522),
    (
        (
            *_REQ,
            _u("send_response"),
            _u("write", LIBC),
            *_SYSCALL,
            _k("ksys_write"),
            _k("vfs_write"),
            _k("tcp_sendmsg"),
        ),
        694,
    ),
    ((*_BASE, _u("accept_loop"), _u("accept4", LIBC), *_SYSCALL, _k("__sys_accept4")), 143),
    ((*_BASE, _u("walk_tree"), _u("walk_tree"), _u("walk_tree"), _u("visit")), 260),
    ((*_BASE, _u("walk_tree"), _u("walk_tree")), 75),
    ((*_BASE, _u("log_stats"), _u("vfprintf", LIBC)), 96),
    ((*_BASE, _u("log_stats"), _u("hash_payload"), _u("mix_round")), 180),
    ((_u("_start"), _u("__libc_start_main", LIBC), _u("main")), 12),
)


LATER: tuple[tuple[tuple[Frame, ...], int], ...] = (
    ((*_REQ, _u("parse_headers"), _u("strchr", LIBC)), 1900),
    ((*_REQ, _u("parse_headers")), 400),
    ((*_REQ, _u("hash_payload"), _u("mix_round")), 300),
)
"""What a later tick adds: parsing got hotter (for the baseline-diff screen)."""


def demo_profile(later: bool = False) -> Profile:
    profile = Profile()
    for frames, count in STACKS + (LATER if later else ()):
        profile.add("demo", frames, count)
    return profile


def demo_snapshot(seq: int = 1, phase: Phase = Phase.SAMPLING, later: bool = False) -> Snapshot:
    """The fixture snapshot: fixed numbers, nothing depends on the clock."""
    profile = demo_profile(later)
    total = profile.total_samples
    stats = CollectionStats(
        probe="profile:hz:99",
        elapsed_s=48.0 if later else 47.0,
        total_samples=total,
        samples_per_s=260.0 if later else 198.0,
        lost_events=0,
        stack_errors=(("user EFAULT", 17), ("kernel EFAULT", 2)),
    )
    process = ProcessInfo(
        pid=4242,
        name="demo",
        cmdline="build/workloads/demo 60",
        cpu_percent=101.5,
        rss_bytes=1_441_792,
        num_threads=2,
        alive=phase is not Phase.EXITED,
    )
    return Snapshot(
        seq=seq,
        phase=phase,
        stats=stats,
        process=process,
        tree=profile.tree(),
        hot=profile.hot_functions(200),
        unknown=UNKNOWN,
        maps=MAPS,
        overhead=Overhead(cpu_percent=1.8, bpf_run_ns_per_s=412_000.0, bpf_runs_per_s=198.0),
        time_mode="cumulative",
        threads=THREADS,
        unwind=UNWIND,
    )


THREADS = (ThreadShare(4242, "demo", 9_325), ThreadShare(4243, "compressor", 283))
"""The demo workload's two threads (main's name is the process's)."""


class _HintsNow(Hints):
    """The program's hints, looked up at once (the fixture must not depend on a thread)."""

    def hint(self, frame: Frame) -> str:
        return hint(frame)


UNKNOWN = unknown_shares(
    {(Unresolved.NO_SYMBOLS, CODEC): 522, (Unresolved.STACK_UNREADABLE, ""): 17}, _HintsNow()
)
MAPS = (
    MapUsage("targets", "hash", 1, 64, 4, 1),
    MapUsage("control", "array", 8, 8, 4, 4),
    MapUsage("counts0", "hash", 1_204, 10_240, 24, 8),
    MapUsage("counts1", "hash", 1_187, 10_240, 24, 8),
    MapUsage("stacks0", "stack_trace", 512, 10_240, 4, 1016),
    MapUsage("stacks1", "stack_trace", 498, 10_240, 4, 1016),
    MapUsage("drops", "percpu_array", 4, 4, 4, 8),
    MapUsage("events", "perf_event_array", 4, 4, 4, 4),
    MapUsage("wcounts0", "hash", 0, 10_240, 24, 16),
    MapUsage("wcounts1", "hash", 0, 10_240, 24, 16),
    MapUsage("wstacks", "stack_trace", 0, 4_096, 4, 1016),
    MapUsage("wstacks_1", "stack_trace", 0, 4_096, 4, 1016),
    MapUsage("calls", "hash", 0, 4_096, 4, 16),
    MapUsage("blocked", "hash", 0, 4_096, 4, 16),
    MapUsage("unwind_mode", "array", 1, 1, 4, 4),
    MapUsage("unwind_rows", "array", 241_310, 262_144, 4, 16, slots_used=True),
    MapUsage("unwind_index", "array", 18_433, 65_536, 4, 4, slots_used=True),
    MapUsage("unwind_procs", "hash", 1, 64, 4, 12_296),
    MapUsage("unwind_scratch", "percpu_array", 1, 1, 4, 1_064),
    MapUsage("ustacks0", "hash", 9_870, 10_240, 4, 1_032),
    MapUsage("ustacks1", "hash", 9_310, 10_240, 4, 1_032),
    MapUsage("unwind_progs", "prog_array", 1, 1, 4, 4),
)
UNWIND = UnwindState(
    mode="auto", tables_loaded=6, rows_used=241_310, rows_max=262_144, index_used=18_433,
    index_max=65_536, tables_refused=1, mappings_dropped=0, files_without_cfi=1, processes=3,
    processes_waiting=1, fp_fallbacks=(("tables not built yet", 412),),
)  # fmt: skip
"""The walker nearly full: libLLVM's table did not fit, one JIT-ish file has no CFI."""


BASELINE_KEYS = ("e", "b")
"""Keys pressed on the first snapshot (freeze it as the baseline) before the later one."""
BASELINE_AFTER: dict[str, tuple[str, ...]] = {"baseline-tree": (), "baseline-top": ("1",)}
"""Keys pressed once ``demo_snapshot(2, later=True)`` is shown, per screen."""
