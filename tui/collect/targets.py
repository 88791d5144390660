"""What bpftop profiles: pids (-p, repeatable), every process (-a), or a command it starts.

``launch_held`` starts ``bpftop -- COMMAND`` stopped before the command's
first instruction: a shell that stops itself and, once continued, execs the
command in the same process (so the pid probes were attached for is the
command's); it is killed if bpftop dies (even by SIGKILL), never left
stopped. ``release`` lets it exec, and the BPF program stops it again right
after the exec, so the new image is symbolized before ``resume`` lets it run
(a command that exits within a millisecond still gets names).
``ProcessLabels`` names each process of a sample (the root's children in the
call tree); ``Followed`` keeps the run going while a followed process lives
(more -p, --children) and names children from their parents' maps;
``SystemWatch`` stands in for the process watch with -a. No Textual here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

from bpftop.base.errors import UsageError
from bpftop.bpf.raw import RawTick
from bpftop.symbols.process import read_start_time
from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.collect.process_watch import any_thread_alive
from bpftop.tui.collect.sampler import Sampler
from bpftop.tui.collect.thread_names import ThreadNames
from bpftop.tui.model.snapshot import ProcessInfo

MAX_PARENTS = 65536  # forks remembered for naming children that exit unseen
HOLD = 'kill -STOP $$; exec "$0" "$@"'
EXEC_WAIT_S = 2.0


def launch_held(command: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start ``command`` stopped before it runs; raises UsageError if it cannot run."""
    if not command:
        raise UsageError("no command after --", "for example: bpftop -- ./server --port 8080")
    if shutil.which(command[0]) is None:
        raise UsageError(f"cannot run {command[0]}: not found or not executable", "check the path")
    proc = subprocess.Popen(["/bin/sh", "-c", HOLD, *command], preexec_fn=_dies_with(os.getpid()))
    deadline = time.monotonic() + EXEC_WAIT_S
    while _state(proc.pid) != "T":
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise UsageError(f"could not start {command[0]} held", "is /bin/sh usable?")
        time.sleep(0.001)
    return proc


def held_command(proc: subprocess.Popen[bytes] | None) -> list[str]:
    """The command a ``launch_held`` process will exec (as the user gave it), or []."""
    if proc is None or not isinstance(proc.args, list) or proc.args[2:3] != [HOLD]:
        return []
    return [str(arg) for arg in proc.args[3:]]


PR_SET_PDEATHSIG = 1  # prctl(2)


def _dies_with(parent: int) -> Callable[[], None]:
    """A hook for the command's child process, between fork and exec: SIGKILL it
    when bpftop dies (PR_SET_PDEATHSIG; kept across the execs). Held, it is
    stopped, and only SIGKILL ends a stopped process: without this, a bpftop
    killed during its compile would leave the command stopped for good."""
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl  # looked up before the fork: the hook only calls it
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong)

    def hook() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # bpftop died before the prctl
            os._exit(1)

    return hook


def release(proc: subprocess.Popen[bytes], *, held_at_exec: bool = True) -> None:
    """Continue a held command until it has exec'd and, ``held_at_exec``, stopped
    again (the BPF program stops it right after the exec: ``CpuSampler.hold_at_exec``;
    without BPF it runs on from its exec)."""
    shell = _exe(proc.pid)
    os.kill(proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + EXEC_WAIT_S
    while time.monotonic() < deadline and proc.poll() is None:
        if _exe(proc.pid) != shell and (not held_at_exec or _state(proc.pid) == "T"):
            return
        time.sleep(0.0005)


def resume(proc: subprocess.Popen[bytes]) -> None:
    """Let the exec'd command run its first instruction."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGCONT)


def end_command(proc: subprocess.Popen[bytes] | None, wait_s: float) -> None:
    """End a command bpftop started (SIGTERM, continued if it is held; SIGKILL
    if it has not ended ``wait_s`` later): never left stopped, nor waited on for ever."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
        os.kill(proc.pid, signal.SIGCONT)
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)


def is_stopped(pid: int) -> bool:
    """Is ``pid`` stopped (SIGSTOP, state T)? It runs, and is sampled, once continued."""
    return _state(pid) == "T"


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
    """tgid -> process name for the call tree's top level, read once per process.

    ``read_at_exec``: the name a process had when its image was read at an
    exec (from the exec's own thread, within milliseconds), for one gone
    before its label was first asked for (``-a``: a 60 ms program)."""

    def __init__(self, read_at_exec: Callable[[int], str | None] = lambda _: None) -> None:
        self._names: dict[int, str] = {}
        self._parents: dict[int, int] = {}
        self._read_at_exec = read_at_exec

    def name(self, tgid: int) -> str:
        found = self._names.get(tgid)
        if found is None:
            try:
                found = Path(f"/proc/{tgid}/comm").read_text().strip()
            except OSError:  # gone: its name read at its exec, else a forked child's parent's
                parent = self._parents.pop(tgid, None)
                found = self._read_at_exec(tgid) or (
                    f"pid {tgid}" if parent is None else self.name(parent)
                )
            self._names[tgid] = found
        return found

    def adopt(self, child: int, parent: int) -> None:
        """``child`` was forked by ``parent`` (named like it, if gone unread)."""
        if child != parent and child not in self._names:
            self._parents[child] = parent
            if len(self._parents) > MAX_PARENTS:
                del self._parents[next(iter(self._parents))]

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
    """The process watch for -a: every process is a target, none ends the run;
    ``info`` sums up the system (CPU, memory) and what was sampled (``sampled``)."""

    pid = 0
    name = "all processes"
    gone = False

    def __init__(self, sampled: ThreadNames) -> None:
        self._sampled = sampled
        self._cpus = psutil.cpu_count() or 1
        psutil.cpu_percent()  # prime: the first call compares with boot

    def exited(self) -> bool:
        return False

    def info(self) -> ProcessInfo:
        return ProcessInfo(
            pid=0,
            name=self.name,
            cmdline="",
            cpu_percent=psutil.cpu_percent() * self._cpus,
            rss_bytes=psutil.virtual_memory().used,
            num_threads=self._sampled.threads,
            alive=True,
            processes=self._sampled.processes,
            cpus=self._cpus,
        )


class Followed:
    """The processes followed beside the main target (more -p, --children's
    children): the run goes on while any of them lives. ``note_forks`` takes a
    tick's new tasks: a child process is followed and symbolized now (named
    from its parent's maps if it is already gone, unless it exec'd); a new
    thread (its process is counted already) and a gone process leave the
    kernel's target map, as do followed processes gone since the last forks
    (only then: the sampler is touched only when BPF is surely loaded)."""

    def __init__(
        self, pids: Sequence[int], symbolizer: Symbolizer, sampler: Sampler, labels: ProcessLabels
    ) -> None:
        self._symbolizer, self._sampler, self._labels = symbolizer, sampler, labels
        self._live = {pid: read_start_time(pid) for pid in pids}
        self._gone: list[int] = []  # gone since the last forks: to untarget then

    def note_forks(self, tick: RawTick) -> None:
        if not tick.forks:  # (fork events come from BPF only: its maps are ready then)
            return
        self.alive()
        for pid in self._gone:  # the kernel's target map (1024 slots) keeps room
            self._sampler.remove_target(pid)
        self._gone.clear()
        execs = set(tick.execs)
        for child, parent in zip(tick.forks, tick.fork_parents, strict=False):
            if child not in execs:  # an exec'd child's image is not its parent's
                self._symbolizer.adopt(child, parent)
            if is_process(child):
                self._live[child] = read_start_time(child)
                self._symbolizer.prepare(child, preload=True)
            else:  # a thread (its process is a target already), or gone: untarget it
                self._sampler.remove_target(child)
            self._labels.adopt(child, parent)

    def alive(self) -> bool:
        """Does any followed process still run? A process runs while any of its
        threads does (a zombie main thread with live threads is alive)."""
        for pid, start in list(self._live.items()):
            if read_start_time(pid) != start or not any_thread_alive(pid):
                del self._live[pid]
                self._gone.append(pid)
        return bool(self._live)
