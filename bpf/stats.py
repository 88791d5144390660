"""Kernel BPF run-time statistics: how much CPU our programs cost.

``BPF_ENABLE_STATS`` turns on per-program run time and run counts for as long
as the returned fd stays open (so they go off again when bpftop exits, unlike
the global ``kernel.bpf_stats_enabled`` sysctl). The numbers (``run_time_ns``,
``run_cnt``, and the runs the kernel skipped, ``recursion_misses``) are read
with one ``BPF_OBJ_GET_INFO_BY_FD`` call per program (the drain reads every
program's skipped runs each tick: ~25 us a program through
``/proc/self/fdinfo/<prog fd>``, ~1 ms a tick), or from that fdinfo file where
the call fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
from dataclasses import dataclass
from pathlib import Path

_SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(platform.machine())
_BPF_OBJ_GET_INFO_BY_FD, _BPF_ENABLE_STATS = 15, 32  # enum bpf_cmd
_BPF_STATS_RUN_TIME = 0  # enum bpf_stats_type
# struct bpf_prog_info (linux/bpf.h) up to recursion_misses (Linux 5.12), where
# run_time_ns, run_cnt and recursion_misses are (a kernel without one leaves it 0,
# as its fdinfo has no such line).
_PROG_INFO_SIZE = 216
_RUN_NUMBERS = struct.Struct("=QQQ")
_RUN_NUMBERS_AT = 192
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _InfoAttr(ctypes.Structure):
    """union bpf_attr's ``info`` member (BPF_OBJ_GET_INFO_BY_FD)."""

    _fields_ = (
        ("bpf_fd", ctypes.c_uint32),
        ("info_len", ctypes.c_uint32),
        ("info", ctypes.c_uint64),
    )


@dataclass(frozen=True, slots=True)
class ProgStats:
    """Cumulative run time and run count of one BPF program."""

    run_time_ns: int = 0
    run_count: int = 0

    def __add__(self, other: ProgStats) -> ProgStats:
        return ProgStats(self.run_time_ns + other.run_time_ns, self.run_count + other.run_count)

    def __sub__(self, other: ProgStats) -> ProgStats:
        return ProgStats(self.run_time_ns - other.run_time_ns, self.run_count - other.run_count)


def enable_run_stats() -> int | None:
    """Turn run-time stats on; returns the fd that keeps them on, or None."""
    if _SYS_BPF is None:
        return None
    attr = (ctypes.c_uint32 * 16)(_BPF_STATS_RUN_TIME)
    fd = int(_libc.syscall(_SYS_BPF, _BPF_ENABLE_STATS, ctypes.byref(attr), ctypes.sizeof(attr)))
    return fd if fd >= 0 else None


def disable_run_stats(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def prog_stats(prog_fd: int) -> ProgStats:
    """Run time and count of the program behind ``prog_fd`` (zeros if unknown)."""
    run_time_ns, run_count, _ = run_numbers(prog_fd)
    return ProgStats(run_time_ns, run_count)


def missed_runs(prog_fd: int) -> int:
    """Runs of the program the kernel skipped (``recursion_misses``, counted
    whether stats are on or not): a kprobe or tracepoint handler that fired
    while another BPF program, or a BPF map syscall, held that CPU."""
    return run_numbers(prog_fd)[2]


def run_numbers(prog_fd: int) -> tuple[int, int, int]:
    """(run_time_ns, run_cnt, recursion_misses) of the program behind ``prog_fd``:
    from the kernel's bpf_prog_info, or from its fdinfo (zeros if unknown)."""
    if _SYS_BPF is not None:
        info = ctypes.create_string_buffer(_PROG_INFO_SIZE)
        attr = _InfoAttr(prog_fd, _PROG_INFO_SIZE, ctypes.addressof(info))
        if _libc.syscall(_SYS_BPF, _BPF_OBJ_GET_INFO_BY_FD, ctypes.byref(attr), 16) == 0:
            numbers: tuple[int, int, int] = _RUN_NUMBERS.unpack_from(info, _RUN_NUMBERS_AT)
            return numbers
    fields = fdinfo_numbers(prog_fd)
    return fields.get("run_time_ns", 0), fields.get("run_cnt", 0), fields.get("recursion_misses", 0)


def fdinfo_numbers(fd: int) -> dict[str, int]:
    """The numeric ``key: value`` lines of /proc/self/fdinfo/FD ({} if unreadable)."""
    try:
        return parse_fdinfo(Path(f"/proc/self/fdinfo/{fd}").read_text())
    except OSError:
        return {}


def parse_fdinfo(text: str) -> dict[str, int]:
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        with contextlib.suppress(ValueError):
            fields[key.strip()] = int(value.strip())
    return fields
