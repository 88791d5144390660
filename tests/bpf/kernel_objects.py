"""What BPF programs, perf events and uprobe events one process holds in the kernel.

Tests look only at their own resources: the programs and perf events behind
one pid's file descriptors, and uprobe_events lines naming a marker path.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

_SYS_BPF = 321  # x86_64
_BPF_PROG_GET_FD_BY_ID = 13
UPROBE_EVENTS = (
    Path("/sys/kernel/tracing/uprobe_events"),
    Path("/sys/kernel/debug/tracing/uprobe_events"),
)


@dataclass(frozen=True)
class Held:
    """BPF program ids and the number of perf-event fds a process holds."""

    prog_ids: frozenset[int]
    perf_events: int


def held_by(pid: int) -> Held:
    progs: set[int] = set()
    perf = 0
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fd_dir):
        try:
            link = os.readlink(fd_dir / fd)
            if link == "anon_inode:[perf_event]":
                perf += 1
            elif link == "anon_inode:bpf-prog":
                for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
                    if line.startswith("prog_id:"):
                        progs.add(int(line.split()[1]))
        except OSError:
            continue  # closed meanwhile
    return Held(frozenset(progs), perf)


def prog_loaded(prog_id: int) -> bool:
    """Is a BPF program with this id still in the kernel (held by anyone)?"""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint32 * 4)(prog_id)
    fd = int(
        libc.syscall(_SYS_BPF, _BPF_PROG_GET_FD_BY_ID, ctypes.byref(attr), ctypes.sizeof(attr))
    )
    if fd >= 0:
        os.close(fd)
        return True
    return False


def uprobe_events_of(pid: int) -> list[str]:
    """uprobe_events lines BCC created for process ``pid`` (it names them ``..._bcc_PID``
    when it has to fall back to tracefs; with the uprobe PMU there are none)."""
    for path in UPROBE_EVENTS:
        if path.exists():
            return [ln for ln in path.read_text().splitlines() if f"_bcc_{pid} " in ln]
    return []
