"""A deterministic, realistic profile for the screenshot and the SVG snapshot test.

Process "demo" serving requests (serve -> handle_request -> hash_payload ->
mix_round ...), a write() into the kernel, an unresolved library frame and a
recursive function. Pure Python, no Textual.
"""

from __future__ import annotations

from bpftop.symbols.frame import Frame, Unresolved
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Phase, ProcessInfo, Snapshot

DEMO = "/opt/demo/bin/demo"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
LIBZ = "/usr/lib/x86_64-linux-gnu/libz.so.1"


def _u(name: str, module: str = DEMO) -> Frame:
    return Frame(name, module, 0x10)


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
    ((*_REQ, _u("compress_body"), Frame(None, LIBZ, 0x1A2B, reason=Unresolved.NO_SYMBOLS)), 522),
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
    ((_u("_start"), _u("__libc_start_main", LIBC), _u("main")), 12),
)


def demo_profile() -> Profile:
    profile = Profile()
    for frames, count in STACKS:
        profile.add("demo", frames, count)
    return profile


def demo_snapshot(seq: int = 1, phase: Phase = Phase.SAMPLING) -> Snapshot:
    """The fixture snapshot: fixed numbers, nothing depends on the clock."""
    profile = demo_profile()
    total = profile.total_samples
    stats = CollectionStats(
        probe="profile:hz:99",
        elapsed_s=47.0,
        total_samples=total,
        samples_per_s=198.0,
        lost_events=0,
        stack_errors=(("user EFAULT", 17), ("kernel EFAULT", 2)),
    )
    process = ProcessInfo(
        pid=4242,
        name="demo",
        cmdline="/opt/demo/bin/demo --port 8080 --workers 2 --config /etc/demo/demo.toml",
        cpu_percent=197.5,
        rss_bytes=48_234_496,
        num_threads=3,
        alive=phase is not Phase.EXITED,
    )
    return Snapshot(
        seq=seq,
        phase=phase,
        stats=stats,
        process=process,
        tree=profile.tree(),
        hot=profile.hot_functions(200),
    )


SCREEN_SIZE = (120, 36)
DEMO_KEYS = ("e",)
"""Keys that expand the call tree along the hot path after the first snapshot."""
