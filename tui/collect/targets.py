"""What bpftop profiles: pids (-p, repeatable), every process (-a), or a command it starts.

``launch_held`` starts ``bpftop -- COMMAND`` stopped before the command's
first instruction: a shell that stops itself and, once continued, execs the
command in the same process (so the pid probes were attached for is the
command's). ``release`` lets it exec, and the BPF program stops it again
right after the exec, so the new image is symbolized before ``resume`` lets
it run (a command that exits within a millisecond still gets names).
``ProcessLabels`` names each process of a sample (the root's children in the
call tree); ``SystemWatch`` stands in for the process watch with -a. No
Textual here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from bpftop.bpf.errors import UsageError
from bpftop.tui.model.snapshot import ProcessInfo

HOLD = 'kill -STOP $$; exec "$0" "$@"'
EXEC_WAIT_S = 2.0


def launch_held(command: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start ``command`` stopped before it runs; raises UsageError if it cannot run."""
    if not command:
        raise UsageError("no command after --", "for example: bpftop -- ./server --port 8080")
    if shutil.which(command[0]) is None:
        raise UsageError(f"cannot run {command[0]}: not found or not executable", "check the path")
    proc = subprocess.Popen(["/bin/sh", "-c", HOLD, *command])
    deadline = time.monotonic() + EXEC_WAIT_S
    while _state(proc.pid) != "T":
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise UsageError(f"could not start {command[0]} held", "is /bin/sh usable?")
        time.sleep(0.001)
    return proc


def release(proc: subprocess.Popen[bytes]) -> None:
    """Continue a held command until it has exec'd and stopped again (the BPF
    program stops it right after the exec: ``CpuSampler.hold_at_exec``)."""
    shell = _exe(proc.pid)
    os.kill(proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + EXEC_WAIT_S
    while time.monotonic() < deadline and proc.poll() is None:
        if _exe(proc.pid) != shell and _state(proc.pid) == "T":
            return
        time.sleep(0.0005)


def resume(proc: subprocess.Popen[bytes]) -> None:
    """Let the exec'd command run its first instruction."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGCONT)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


class ProcessLabels:
    """tgid -> process name for the call tree's top level, read once per process."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}

    def name(self, tgid: int) -> str:
        found = self._names.get(tgid)
        if found is None:
            try:
                found = Path(f"/proc/{tgid}/comm").read_text().strip()
            except OSError:
                found = f"pid {tgid}"
            self._names[tgid] = found
        return found

    def forget(self, tgid: int) -> None:
        """The process exec'd: its name may have changed."""
        self._names.pop(tgid, None)


def is_process(pid: int) -> bool:
    """True for a process (thread group leader), False for another thread or a gone task."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Tgid:"):
                return int(line.split()[1]) == pid
    except OSError:
        pass
    return False


def has_maps(pid: int) -> bool:
    """Can the process's mappings be read (alive, not a zombie)?"""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            return bool(maps.readline())
    except OSError:
        return False


class SystemWatch:
    """The process watch for -a: every process is a target, none ends the run."""

    pid = 0
    name = "all processes"
    gone = False

    def exited(self) -> bool:
        return False

    def info(self) -> ProcessInfo | None:
        return None


PF_KTHREAD = 0x00200000
"""The task flag (field 9 of /proc/PID/stat) of a kernel thread."""


def is_kernel_thread(pid: int) -> bool:
    """Is ``pid`` a kernel thread (no user space to sample)? False if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rpartition(")")[2].split()
    try:
        return bool(int(fields[6]) & PF_KTHREAD)
    except (IndexError, ValueError):
        return False


def refuse_kernel_threads(pids: Sequence[int]) -> None:
    """Raise UsageError for a kernel thread among ``pids``: it has no user stacks
    and bpftop samples only the targets' own processes."""
    for pid in pids:
        if is_kernel_thread(pid):
            raise UsageError(
                f"pid {pid} is a kernel thread: bpftop profiles user processes",
                "for kernel stacks of every process use -a",
            )
