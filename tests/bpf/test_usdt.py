"""usdt: probes against the real kernel: exact counts with and without a
semaphore, launched (``-- COMMAND``) and attached (``-p``); the semaphore
raised only while bpftop is attached and back to its earlier value on every
way bpftop ends; libstdc++'s probes, and the interpreters' own in Debian's
python3.11 and, in their roots (tests/pythons.py), python3.13 and python3.14.

Workloads: tests/workloads/sdt.c (sdt:plain, and sdt:guarded behind a
semaphore), thrower.cc (C++ exceptions: libstdcxx:throw), gc_calls.py
(python:gc__done). Each says itself what it did (rounds, rounds that saw the
semaphore raised, collections), so every count here is checked against the
workload's own account, never against bpftop's.
"""

from __future__ import annotations

import contextlib
import ctypes as ct
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from bpftop.bpf.probes import ProbeSpecError, parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.resolve import resolve
from bpftop.bpf.usdt import usdt_notes
from tests.bpf.test_early_errors import FAST_S
from tests.bpf.test_early_errors import record as early_record
from tests.bpf.test_record import parse_folded
from tests.cli.test_errors import assert_one_line_error
from tests.conftest import BPFTOP, ROOT
from tests.pythons import PY311, PY313, PY314, Interpreter

GC_CALLS = ROOT / "tests" / "workloads" / "gc_calls.py"
# Debian's interpreters are built with USDT probes (pyenv's are not).
PYTHONS = (PY311, PY313, PY314)
LIBSTDCXX = "usdt:libstdc++:libstdcxx:throw"
INT3 = 0xCC  # a uprobe is installed: its breakpoint is in the target's text
N = 5000


class Workload:
    """A workload that waits on stdin: one byte starts it; closing stdin ends it."""

    def __init__(self, *command: str) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.pid = self.proc.pid

    def line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"workload {self.pid} ended without a word"
        return line.strip()

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("g")
        self.proc.stdin.flush()

    def end(self) -> None:
        """Close stdin: the workload exits (bpftop -p then ends by itself)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(30) == 0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def counts(line: str) -> dict[str, int]:
    """'plain=5 guarded=0' -> {'plain': 5, 'guarded': 0}."""
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def read_u16(pid: int, address: int) -> int:
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        return int.from_bytes(os.pread(fd, 2, address), "little")
    finally:
        os.close(fd)


def write_u16(pid: int, address: int, value: int) -> None:
    """What another tracer does to a semaphore it enables."""
    fd = os.open(f"/proc/{pid}/mem", os.O_WRONLY)
    try:
        os.pwrite(fd, value.to_bytes(2, "little"), address)
    finally:
        os.close(fd)


def runtime_address(pid: int, path: str, vaddr: int) -> int:
    """Where virtual address ``vaddr`` of file ``path`` is in process ``pid``."""
    with open(path, "rb") as f:
        loads = [s for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_LOAD"]
    seg = next(s for s in loads if s["p_vaddr"] <= vaddr < s["p_vaddr"] + s["p_memsz"])
    offset = vaddr - seg["p_vaddr"] + seg["p_offset"]
    real = os.path.realpath(path)
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or os.path.realpath(fields[5]) != real:
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        map_offset = int(fields[2], 16)
        if map_offset <= offset < map_offset + (end - start):
            return start + offset - map_offset
    raise AssertionError(f"{path} offset 0x{offset:x} is not mapped in {pid}")


BPF_TASK_FD_QUERY, BPF_FD_TYPE_UPROBE, SYS_BPF = 20, 4, 321  # linux/bpf.h, x86_64


class _TaskFdQuery(ct.Structure):
    _fields_ = [
        ("pid", ct.c_uint32),
        ("fd", ct.c_uint32),
        ("flags", ct.c_uint32),
        ("buf_len", ct.c_uint32),
        ("buf", ct.c_uint64),
        ("prog_id", ct.c_uint32),
        ("fd_type", ct.c_uint32),
        ("probe_offset", ct.c_uint64),
        ("probe_addr", ct.c_uint64),
    ]


def uprobes_with_programs(pid: int) -> set[tuple[str, int]]:
    """(file, offset) of every uprobe process ``pid`` holds with a BPF program
    attached (BPF_TASK_FD_QUERY on each of its perf event fds, as bpftool perf)."""
    libc = ct.CDLL(None, use_errno=True)
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            if "perf_event" not in os.readlink(f"/proc/{pid}/fd/{fd}"):
                continue
        name = ct.create_string_buffer(4096)
        query = _TaskFdQuery(pid=pid, fd=int(fd), buf_len=4096, buf=ct.addressof(name))
        ok = libc.syscall(SYS_BPF, BPF_TASK_FD_QUERY, ct.byref(query), ct.sizeof(query)) == 0
        if ok and query.fd_type == BPF_FD_TYPE_UPROBE and query.prog_id:
            found.add((os.path.realpath(name.value.decode()), int(query.probe_offset)))
    return found


def mapped(pid: int, name: str, timeout: float = 10.0) -> str:
    """The path of the first file in pid's maps whose name contains ``name``,
    once the dynamic loader has mapped it (right after the fork it has not)."""
    end = time.monotonic() + timeout
    while True:
        paths = [p for p in Path(f"/proc/{pid}/maps").read_text().split() if name in p]
        if paths:
            return paths[0]
        assert time.monotonic() < end, f"{name} never mapped in {pid}"
        time.sleep(0.01)


def file_offset(path: str, vaddr: int) -> int:
    with open(path, "rb") as f:
        loads = [s for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_LOAD"]
    seg = next(s for s in loads if s["p_vaddr"] <= vaddr < s["p_vaddr"] + s["p_filesz"])
    return int(vaddr - seg["p_vaddr"] + seg["p_offset"])


def wait_attached(
    pid: int, path: str, provider: str, name: str, bpftop: subprocess.Popen[str]
) -> None:
    """Until bpftop holds a uprobe with its program at every site of the probe
    (the breakpoint in the target's text comes first: perf_event_open installs
    it, the program is attached by a later ioctl), and the breakpoint is there."""
    notes = [n for n in usdt_notes(path) if (n.provider, n.name) == (provider, name)]
    wanted = {(os.path.realpath(path), file_offset(path, n.address)) for n in notes}
    sites = [runtime_address(pid, path, n.address) for n in notes]
    deadline = time.monotonic() + 90  # a compile on a loaded 2-core machine
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        while not (
            wanted <= uprobes_with_programs(bpftop.pid)
            and all(os.pread(fd, 1, site)[0] == INT3 for site in sites)
        ):
            assert bpftop.poll() is None, f"bpftop ended ({bpftop.returncode}) before attaching"
            assert time.monotonic() < deadline, "bpftop did not attach within 90 s"
            time.sleep(0.05)
    finally:
        os.close(fd)


def start_record(out: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(BPFTOP), "record", "-o", str(out), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=None if env is None else {**os.environ, **env},
    )


def finish(bpftop: subprocess.Popen[str], timeout: float = 60) -> str:
    """Wait for bpftop; its stderr. A crash (SIGSEGV, SIGBUS) fails here."""
    _, err = bpftop.communicate(timeout=timeout)
    assert bpftop.returncode == 0, f"bpftop exited {bpftop.returncode}: {err}"
    return err


def total(out: Path) -> int:
    return sum(parse_folded(out).values())


@pytest.fixture
def sdt(workloads: Path) -> Iterator[tuple[Workload, int]]:
    """The sdt workload, held, with its semaphore's address."""
    workload = Workload(str(workloads / "sdt"), str(N))
    try:
        first = workload.line()
        assert first.startswith("semaphore=0x"), first
        yield workload, int(first.removeprefix("semaphore="), 16)
    finally:
        workload.kill()


def record_attached(
    out: Path, workload: Workload, path: str, provider: str, name: str
) -> tuple[dict[str, int], int]:
    """Record ``usdt:path:provider:name`` on a held workload with -p, run it to
    the end: (the workload's own counts, the hits bpftop wrote)."""
    bpftop = start_record(out, "-p", str(workload.pid), "--probe", f"usdt:{path}:{provider}:{name}")
    try:
        wait_attached(workload.pid, path, provider, name, bpftop)
        workload.go()
        said = counts(workload.line())
        workload.end()
        finish(bpftop)
    finally:
        bpftop.kill()
    return said, total(out)


def test_plain_probe_counts_exactly_attached(
    sdt: tuple[Workload, int], workloads: Path, tmp_path: Path
) -> None:
    workload, _ = sdt
    said, hits = record_attached(
        tmp_path / "o.folded", workload, str(workloads / "sdt"), "sdt", "plain"
    )
    assert said == {"plain": N, "guarded": 0}, "a probe without a semaphore raises none"
    assert hits == N
    leaves = {stack[-1] for stack in parse_folded(tmp_path / "o.folded")}
    assert leaves == {"plain_site"}, leaves


def test_guarded_probe_counts_exactly_attached(
    sdt: tuple[Workload, int], workloads: Path, tmp_path: Path
) -> None:
    """The semaphore is raised before the workload runs: every round fires."""
    workload, semaphore = sdt
    assert read_u16(workload.pid, semaphore) == 0
    said, hits = record_attached(
        tmp_path / "o.folded", workload, str(workloads / "sdt"), "sdt", "guarded"
    )
    assert said == {"plain": N, "guarded": N}, "the semaphore was raised for every round"
    assert hits == N


@pytest.mark.parametrize("name", ["plain", "guarded"])
def test_counts_exactly_launched(name: str, workloads: Path, tmp_path: Path) -> None:
    """Attached before the command's first instruction: every round counts, and
    the guarded probe's semaphore is raised in the new image before main."""
    sdt = str(workloads / "sdt")
    out = tmp_path / "o.folded"
    bpftop = start_record(out, "--probe", f"usdt:{sdt}:sdt:{name}", "--", sdt, str(N), "go")
    stdout, err = bpftop.communicate(timeout=120)
    assert bpftop.returncode == 0, f"bpftop exited {bpftop.returncode}: {err}"
    said = counts(stdout.splitlines()[-1])
    assert said == {"plain": N, "guarded": N if name == "guarded" else 0}
    assert total(out) == N


@pytest.mark.parametrize("ending", ["duration", "SIGINT", "SIGTERM", "SIGKILL"])
def test_semaphore_is_restored_however_bpftop_ends(
    ending: str, sdt: tuple[Workload, int], workloads: Path, tmp_path: Path
) -> None:
    """Another tracer holds the semaphore at 3: bpftop makes it 4 while attached
    and leaves 3 behind, whether it ends by -d, Ctrl-C, SIGTERM or SIGKILL (the
    kernel lowers it when the uprobe goes, even if bpftop runs no cleanup)."""
    workload, semaphore = sdt
    write_u16(workload.pid, semaphore, 3)
    path = str(workloads / "sdt")
    duration = ["-d", "4"] if ending == "duration" else []
    bpftop = start_record(
        tmp_path / "o.folded",
        "-p",
        str(workload.pid),
        "--probe",
        f"usdt:{path}:sdt:guarded",
        *duration,
    )
    try:
        wait_attached(workload.pid, path, "sdt", "guarded", bpftop)
        assert read_u16(workload.pid, semaphore) == 4
        if ending != "duration":
            bpftop.send_signal(getattr(signal, ending))
        bpftop.communicate(timeout=60)
        # record saves what it has on Ctrl-C and SIGTERM; SIGKILL runs nothing of ours
        assert bpftop.returncode == (-signal.SIGKILL if ending == "SIGKILL" else 0)
        deadline = time.monotonic() + 5  # SIGKILL: the kernel closes bpftop's fds as it dies
        while read_u16(workload.pid, semaphore) != 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert read_u16(workload.pid, semaphore) == 3
    finally:
        bpftop.kill()


def test_semaphore_follows_probe_switches(sdt: tuple[Workload, int], workloads: Path) -> None:
    """Switching away lowers it (the old probe is detached at the next drain),
    switching back raises it, closing lowers it; a rejected spec changes nothing."""
    workload, semaphore = sdt
    path = workloads / "sdt"
    with CpuSampler(99) as sampler:
        sampler.load()
        sampler.set_targets([workload.pid])
        sampler.start()
        assert read_u16(workload.pid, semaphore) == 0
        sampler.switch(parse_spec(f"usdt:{path}:sdt:guarded"))
        assert read_u16(workload.pid, semaphore) == 1
        with pytest.raises(ProbeSpecError, match="did you mean: sdt:guarded"):
            sampler.switch(parse_spec(f"usdt:{path}:sdt:guardd"))
        assert read_u16(workload.pid, semaphore) == 1
        sampler.switch(parse_spec("profile:hz:99"))
        sampler.drain()
        assert read_u16(workload.pid, semaphore) == 0
        sampler.switch(parse_spec(f"usdt:{path}:sdt:guarded"))
        assert read_u16(workload.pid, semaphore) == 1
        workload.go()
        assert counts(workload.line()) == {"plain": N, "guarded": N}
        assert sampler.drain().total_samples == N
    assert read_u16(workload.pid, semaphore) == 0


def test_libstdcxx_throw_attached_counts_exactly(workloads: Path, tmp_path: Path) -> None:
    """The probe that crashed bpftop (SIGSEGV or SIGBUS in BCC's USDT code, which
    read a freed context, before and during attach). With -p and the default
    --unwind auto, and no table cache (each table is built, seconds for
    libstdc++), the unwind feed builds and loads tables on its thread while the
    probe is resolved and attached on the collector's: libbcc on two threads."""
    workload = Workload(str(workloads / "thrower"), str(N))
    try:
        library = mapped(workload.pid, "libstdc++")
        out = tmp_path / "o.folded"
        no_cache = {"BPFTOP_SYMBOL_CACHE_DIR": ""}
        bpftop = start_record(out, "-p", str(workload.pid), "--probe", LIBSTDCXX, env=no_cache)
        try:
            wait_attached(workload.pid, library, "libstdcxx", "throw", bpftop)
            workload.go()
            assert counts(workload.line()) == {"thrown": N}
            workload.end()
            finish(bpftop)
        finally:
            bpftop.kill()
        assert total(out) == N
        assert all("__cxa_throw" in stack for stack in parse_folded(out))
    finally:
        workload.kill()


def test_libstdcxx_throw_launched_counts_exactly(workloads: Path, tmp_path: Path) -> None:
    """Before the exec the target maps no libstdc++: found through ldconfig.
    Its throws come in its first milliseconds: held again where the loader
    has mapped its libraries, every stack is whole and named from the first
    hit (it gave `libstdc+++0xa9c00;libstdc+++0x19c420;__cxa_throw`, walked
    on by frame pointer through code without them, or all [unknown])."""
    out = tmp_path / "o.folded"
    thrower = str(workloads / "thrower")
    bpftop = start_record(out, "--probe", LIBSTDCXX, "--", thrower, str(N), "go")
    stdout, err = bpftop.communicate(timeout=120)
    assert bpftop.returncode == 0, f"bpftop exited {bpftop.returncode}: {err}"
    assert counts(stdout.splitlines()[-1]) == {"thrown": N}
    assert total(out) == N
    for stack in parse_folded(out):
        assert stack[1] == "_start" and "main" in stack and stack[-1] == "__cxa_throw", stack


def _python_with_probes(python: Interpreter) -> str:
    """The interpreter's file (as bpftop sees it), once it has python:gc__done."""
    binary = str(python.host_binary())
    if not os.path.exists(binary) or not any(n.name == "gc__done" for n in usdt_notes(binary)):
        pytest.fail(f"{binary} with USDT probes is needed (Debian's python{python.version})")
    return binary


@pytest.mark.parametrize("python", PYTHONS, ids=str)
def test_python_gc_done_attached_counts_exactly(python: Interpreter, tmp_path: Path) -> None:
    """gc__done is behind a semaphore in Debian's interpreters: it fires only
    once bpftop raised it. Automatic collection is off; the script collects N
    times. The probe is named as in the target's maps (python3.X), its file
    (3.13, 3.14) in the target's root."""
    binary = _python_with_probes(python)
    (sem,) = [n.semaphore for n in usdt_notes(binary) if n.name == "gc__done"]
    workload = Workload(*python.argv(GC_CALLS, "300"))
    try:
        name = os.path.basename(python.binary)
        mapped(workload.pid, name)  # (chroot has exec'd the interpreter)
        out = tmp_path / "o.folded"
        bpftop = start_record(
            out, "-p", str(workload.pid), "--probe", f"usdt:{name}:python:gc__done"
        )
        try:
            wait_attached(workload.pid, binary, "python", "gc__done", bpftop)
            semaphore = runtime_address(workload.pid, binary, sem)
            assert read_u16(workload.pid, semaphore) == 1
            workload.go()
            assert counts(workload.line())["collections"] >= 300
            workload.end()
            finish(bpftop)
        finally:
            bpftop.kill()
        assert total(out) == 300
    finally:
        workload.kill()


@pytest.mark.parametrize("named_by", ["path", "name"])
@pytest.mark.parametrize("python", PYTHONS, ids=str)
def test_python_gc_done_launched_counts_every_collection(
    python: Interpreter, named_by: str, tmp_path: Path
) -> None:
    """From the first instruction: startup's collections count too, and the
    script says how many there were in all (gc.get_stats). The probe's file
    is named as the target sees it, by path or by name: for 3.13 and 3.14
    only their root has it, found once chroot has exec'd the interpreter
    (held there, before its first instruction)."""
    _python_with_probes(python)
    out = tmp_path / "o.folded"
    command = python.argv(GC_CALLS, "200", "go")  # PATH's python3.11 may be another
    file = python.binary if named_by == "path" else os.path.basename(python.binary)
    spec = f"usdt:{file}:python:gc__done"
    bpftop = start_record(out, "--probe", spec, "--", *command)
    stdout, err = bpftop.communicate(timeout=120)
    assert bpftop.returncode == 0, f"bpftop exited {bpftop.returncode}: {err}"
    collections = counts(stdout.splitlines()[-1])["collections"]
    assert collections >= 200
    assert total(out) == collections


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "usdt:/usr/bin/python3.11:python:gc_done",
            "no USDT probe python:gc_done in /usr/bin/python3.11 (did you mean: python:gc__done",
        ),
        ("usdt:/etc/passwd:p:n", "could not read /etc/passwd: not an ELF file) (give the path"),
        ("usdt:/bin/true:p:n", "no USDT probe p:n in /bin/true (it has no USDT probes"),
    ],
)
def test_a_probe_that_is_not_there_fails_before_the_compile(
    sleeper: int, tmp_path: Path, spec: str, message: str
) -> None:
    """One line, exit 2, and no compile (see test_early_errors: its broken
    program would have made the exit code 5)."""
    result, took_s = early_record(tmp_path, "-p", str(sleeper), "--probe", spec)
    assert_one_line_error(result, 2, message)
    assert took_s < FAST_S, f"{spec}: the error took {took_s:.2f} s of CPU"


def test_a_missing_probe_lists_what_the_file_has(workloads: Path) -> None:
    with pytest.raises(ProbeSpecError, match=r"it has: sdt:guarded, sdt:plain"):
        resolve(parse_spec(f"usdt:{workloads / 'sdt'}:sdt:x"), [])
    with pytest.raises(ProbeSpecError, match=r"did you mean: sdt:plain"):
        resolve(parse_spec(f"usdt:{workloads / 'sdt'}:sdt:plan"), [])
