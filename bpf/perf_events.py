"""CPU sampling over perf_event_open(2) alone: no compile, samples within milliseconds.

Owns :class:`PerfSampler`: one software cpu-clock event per online CPU
(pid -1, every task; root), in frequency mode, timestamps on CLOCK_MONOTONIC
(comparable with ``time.monotonic_ns()`` and ``bpf_ktime_get_ns()``), each
with its own mmap ring read with the data_head/data_tail protocol. Beside
each, a dummy event's ring receives the kernel's PERF_RECORD_COMM records
of execs on that CPU (time-stamped the same way), so each sample can be
told apart by the image its process ran: a ring of execs is taken after
the sample rings, so every exec that happened before a sample taken is in
hand with it (the kernel writes the record during the exec, before the new
image runs). Every
sample carries the kernel and the frame-pointer user callchain, the user
registers ip, sp, bp and a copy of the top of the user stack (for an
.eh_frame walk in user space). Processes that are not targets are dropped
while parsing. Used to sample while BCC compiles, and instead of BPF when
BPF cannot load. ``close()`` unmaps and closes everything.

Lost records come from each event's count (read(2), PERF_FORMAT_LOST; before
6.0 from PERF_RECORD_LOST): the kernel writes that record only before the
first record that fits after a drain, so a ring full until its last drain
would never report its loss.

Layouts and constants are from man perf_event_open(2) and
linux/perf_event.h (x86-64).
"""

from __future__ import annotations

import ctypes as ct
import errno
import mmap
import os
import select
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from bpftop.base.errors import PerfEventError, PermissionsError
from bpftop.bpf.raw import Addresses

SYS_PERF_EVENT_OPEN = 298  # x86-64
PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_DUMMY = 1, 0, 9
PERF_FLAG_FD_CLOEXEC = 1 << 3
PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_DISABLE = 0x2400, 0x2401  # _IO('$', 0), _IO('$', 1)
CLOCK_MONOTONIC = 1
# sample_type bits
SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME, SAMPLE_CALLCHAIN, SAMPLE_CPU = 1, 2, 4, 32, 128
SAMPLE_REGS_USER, SAMPLE_STACK_USER = 1 << 12, 1 << 13
SAMPLE_TYPE = (
    SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_CALLCHAIN
    | SAMPLE_REGS_USER | SAMPLE_STACK_USER
)  # fmt: skip
# arch/x86/include/uapi/asm/perf_regs.h: the regs come back in bit order (bp, sp, ip).
PERF_REG_X86_BP, PERF_REG_X86_SP, PERF_REG_X86_IP = 6, 7, 8
REGS_USER_MASK = (1 << PERF_REG_X86_BP) | (1 << PERF_REG_X86_SP) | (1 << PERF_REG_X86_IP)
# attr flag bits (the bitfield after read_format)
ATTR_DISABLED, ATTR_FREQ, ATTR_USE_CLOCKID = 1 << 0, 1 << 10, 1 << 25
ATTR_COMM, ATTR_SAMPLE_ID_ALL, ATTR_COMM_EXEC = 1 << 9, 1 << 18, 1 << 24
PERF_RECORD_LOST, PERF_RECORD_COMM, PERF_RECORD_SAMPLE = 2, 3, 9
PERF_RECORD_MISC_COMM_EXEC = 1 << 13  # a COMM record written by an exec
EXEC_RING_PAGES = 16  # ~1,300 exec records (48 bytes) between two takes
EXEC_WAKE_GAP_S = 0.002  # the ring thread's rest after a take (any exec wakes it)
EXEC_TELL_GAP_S = 0.05  # ... after one that told on_exec of a target's exec
ATTR_WATERMARK = 1 << 14  # wake poll(2) by bytes written (wakeup_watermark), not by samples
PERF_FORMAT_LOST = 1 << 4  # read(2) gives {value, lost}
# Callchain context markers (-128, -512 as u64; every value >= -4095 is a marker).
CONTEXT_KERNEL, CONTEXT_USER, CONTEXT_MAX = 2**64 - 128, 2**64 - 512, 2**64 - 4095
# mmap control page: offsets of data_head, data_tail, data_offset, data_size.
HEAD_AT, TAIL_AT, DATA_OFFSET_AT, DATA_SIZE_AT = 1024, 1032, 1040, 1048
DEFAULT_STACK_BYTES = 16384
RING_HOLDS_S = 2.0  # each CPU's ring holds this long of full-size samples between drains
RING_POLL_S = 0.1  # keep_rings_empty's rhythm (a ring holds 0.9 s at 999 Hz, 4096 pages)
DEFAULT_STACK_BUDGET_BYTES = 32 << 20  # copied user stacks kept, all drains together


class PerfAttr(ct.Structure):
    """struct perf_event_attr (PERF_ATTR_SIZE_VER7, 128 bytes)."""

    _fields_ = [
        ("type", ct.c_uint32),
        ("size", ct.c_uint32),
        ("config", ct.c_uint64),
        ("sample_freq", ct.c_uint64),
        ("sample_type", ct.c_uint64),
        ("read_format", ct.c_uint64),
        ("flags", ct.c_uint64),
        ("wakeup_events", ct.c_uint32),
        ("bp_type", ct.c_uint32),
        ("config1", ct.c_uint64),
        ("config2", ct.c_uint64),
        ("branch_sample_type", ct.c_uint64),
        ("sample_regs_user", ct.c_uint64),
        ("sample_stack_user", ct.c_uint32),
        ("clockid", ct.c_int32),
        ("sample_regs_intr", ct.c_uint64),
        ("aux_watermark", ct.c_uint32),
        ("sample_max_stack", ct.c_uint16),
        ("reserved_2", ct.c_uint16),
        ("aux_sample_size", ct.c_uint32),
        ("reserved_3", ct.c_uint32),
        ("sig_data", ct.c_uint64),
    ]


@dataclass(frozen=True, slots=True)
class UserRegs:
    """The user-mode registers of a sampled thread (at the sample, or at kernel entry)."""

    ip: int
    sp: int
    bp: int


@dataclass(frozen=True, slots=True)
class PerfSample:
    """One sample of a target thread; stacks leaf first, absolute addresses.

    ``user_stack`` is the kernel's frame-pointer walk; ``regs`` and
    ``stack_bytes`` (the user stack copied from ``regs.sp`` up) allow a
    better walk in user space. ``regs`` is None for a thread without user
    state; ``stack_bytes`` is empty when none was copied or the budget of
    kept copies is spent.
    """

    tgid: int
    tid: int
    cpu: int
    time_ns: int
    kernel_stack: Addresses
    user_stack: Addresses
    regs: UserRegs | None
    stack_bytes: bytes


@dataclass(frozen=True, slots=True)
class ExecRecord:
    """A target exec'd at ``time_ns`` (CLOCK_MONOTONIC): its samples after it are of a new image."""

    tgid: int
    time_ns: int


@dataclass(frozen=True, slots=True)
class PerfDrain:
    """What one drain of every ring gave: target samples, the targets' execs
    up to the last sample at least, lost records, stack copies not kept."""

    samples: tuple[PerfSample, ...] = ()
    lost: int = 0
    copies_dropped: int = 0
    execs: tuple[ExecRecord, ...] = ()


def online_cpus() -> tuple[int, ...]:
    """The online CPUs, from /sys/devices/system/cpu/online ("0-3,6")."""
    text = Path("/sys/devices/system/cpu/online").read_text().strip()
    cpus: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return tuple(cpus)


_libc = ct.CDLL(None, use_errno=True)
_libc.syscall.restype = ct.c_long


def _open_event(attr: PerfAttr, cpu: int) -> int:
    fd = _libc.syscall(
        ct.c_long(SYS_PERF_EVENT_OPEN), ct.byref(attr), ct.c_int(-1), ct.c_int(cpu),
        ct.c_int(-1), ct.c_ulong(PERF_FLAG_FD_CLOEXEC),
    )  # fmt: skip
    if fd < 0:
        raise _open_error(ct.get_errno(), cpu)
    return int(fd)


def _open_error(err: int, cpu: int) -> PerfEventError | PermissionsError:
    what = f"perf_event_open (cpu-clock, CPU {cpu}) failed: {os.strerror(err)}"
    if err in (errno.EACCES, errno.EPERM):
        return PermissionsError(what, "run as root (or with CAP_PERFMON)")
    if err in (errno.EMFILE, errno.ENFILE):
        return PerfEventError(what, "raise the open-file limit (ulimit -n)")
    if err in (errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP, errno.ENOSYS):
        return PerfEventError(what, "this kernel lacks perf_event software events")
    if err == errno.EINVAL:
        return PerfEventError(what, "check kernel.perf_event_max_sample_rate")
    return PerfEventError(what, "check kernel perf_event support")


class _Ring:
    """One CPU's event: its fd and its mmap ring (control page + 2^n data pages)."""

    def __init__(self, fd: int, pages: int) -> None:
        self.fd = fd
        self.lost_read = 0  # the event's lost count at the last take (PERF_FORMAT_LOST)
        size = (1 + pages) * mmap.PAGESIZE
        try:
            self.map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as exc:
            os.close(fd)
            raise PerfEventError(
                f"cannot map the perf ring: {exc.strerror}", "check kernel.perf_event_mlock_kb"
            ) from exc
        offset, data_size = struct.unpack_from("<QQ", self.map, DATA_OFFSET_AT)
        self.data_at = offset or mmap.PAGESIZE
        self.data_size = data_size or pages * mmap.PAGESIZE

    def take(self) -> bytes:
        """Every record written since the last take, unwrapped; frees the space."""
        head, tail = struct.unpack_from("<QQ", self.map, HEAD_AT)  # head first, then the data
        if head == tail:
            return b""
        start, end = tail % self.data_size, head % self.data_size
        base = self.data_at
        if start < end:
            chunk = self.map[base + start : base + end]
        else:  # wrapped around the end of the ring
            chunk = self.map[base + start : base + self.data_size] + self.map[base : base + end]
        struct.pack_into("<Q", self.map, TAIL_AT, head)
        return chunk

    def lost_since(self) -> int:
        """Records the kernel could not write since the last call (PERF_FORMAT_LOST)."""
        lost: int = struct.unpack("<QQ", os.read(self.fd, 16))[1]  # {value, lost}
        new, self.lost_read = lost - self.lost_read, lost
        return new

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)


class PerfSampler:
    """cpu-clock sampling on every online CPU, kept only for the target processes."""

    def __init__(
        self,
        sample_hz: int,
        *,
        targets: Iterable[int] = (),
        all_processes: bool = False,
        stack_bytes: int = DEFAULT_STACK_BYTES,
        ring_pages: int = 0,
        stack_budget_bytes: int = DEFAULT_STACK_BUDGET_BYTES,
    ) -> None:
        """``all_processes``: keep every process's samples (-a), not just ``targets``.
        ``stack_bytes`` of user stack are copied per sample; copies are kept
        until ``stack_budget_bytes`` are used (then only the callchains).
        ``ring_pages``: data pages per CPU, a power of two (0: enough for
        RING_HOLDS_S at ``sample_hz``)."""
        ring_pages = ring_pages or ring_pages_for(sample_hz, stack_bytes)
        if ring_pages & (ring_pages - 1):
            raise ValueError(f"ring_pages {ring_pages} is not a power of two")
        self.sample_hz = sample_hz
        self.targets = frozenset(targets)
        self.all_processes = all_processes
        self.stack_bytes = stack_bytes - stack_bytes % 8
        self.ring_pages = ring_pages
        self.stack_budget_bytes = stack_budget_bytes
        self._rings: dict[int, _Ring] = {}
        self._exec_rings: list[_Ring] = []  # a dummy event's per CPU: exec records
        self.enabled_s = 0.0
        self._taking = threading.Lock()  # guards the rings' takes and what they took
        self._taken: list[bytes] = []  # records taken from the rings, not parsed yet
        self._execs_taken: list[ExecRecord] = []  # the targets' execs taken, not drained yet
        self.on_exec: Callable[[], None] | None = None  # (the ring thread) a target exec'd
        self._lost_taken = 0
        self._taker: threading.Thread | None = None
        self._stop_taking = threading.Event()
        self._stop_fds = (-1, -1)
        self._lost = 0  # from PERF_RECORD_LOST records (kept only without PERF_FORMAT_LOST)
        self._lost_readable = True
        self.execs_lost = 0  # exec records the kernel could not write (a full exec ring)

    @property
    def cpus(self) -> tuple[int, ...]:
        return tuple(self._rings)

    @property
    def opened(self) -> bool:
        return bool(self._rings)

    def attr(self) -> PerfAttr:
        attr = PerfAttr(type=PERF_TYPE_SOFTWARE, config=PERF_COUNT_SW_CPU_CLOCK)
        attr.size = ct.sizeof(PerfAttr)
        attr.sample_freq = self.sample_hz
        attr.sample_type = SAMPLE_TYPE
        attr.flags = ATTR_DISABLED | ATTR_FREQ | ATTR_USE_CLOCKID
        attr.clockid = CLOCK_MONOTONIC
        attr.read_format = PERF_FORMAT_LOST if self._lost_readable else 0
        attr.sample_regs_user = REGS_USER_MASK
        attr.sample_stack_user = self.stack_bytes
        return attr

    def open(self) -> None:
        """Open (disabled) one event and ring per online CPU; raises PerfEventError
        or PermissionsError, leaving nothing open."""
        try:
            self._open_rings()
        except PerfEventError:
            if not self._lost_readable:
                raise
            self._lost_readable = False  # a kernel before 6.0: no PERF_FORMAT_LOST (EINVAL)
            self._open_rings()

    def _open_rings(self) -> None:
        attr, execs = self.attr(), exec_attr()
        try:
            for cpu in online_cpus():
                self._rings[cpu] = _Ring(_open_event(attr, cpu), self.ring_pages)
                self._exec_rings.append(_Ring(_open_event(execs, cpu), EXEC_RING_PAGES))
        except BaseException:
            self.close()
            raise

    def set_targets(self, pids: Iterable[int]) -> None:
        self.targets = frozenset(pids)

    def enable(self) -> None:
        """Start sampling (``enabled_s``: CLOCK_MONOTONIC seconds it first did)."""
        self.enabled_s = self.enabled_s or time.monotonic()
        for ring in (*self._exec_rings, *self._rings.values()):  # no sample before its execs
            _ioctl(ring.fd, PERF_EVENT_IOC_ENABLE)

    def disable(self) -> None:
        """Stop sampling; execs are still told until :meth:`close`."""
        for ring in self._rings.values():
            _ioctl(ring.fd, PERF_EVENT_IOC_DISABLE)

    def keep_rings_empty(self, every_s: float = RING_POLL_S) -> None:
        """From now until :meth:`close`, a thread of its own moves what the
        rings hold into memory every ``every_s`` (samples unparsed: a copy per
        ring) and at each exec, so a ring never fills while the caller is busy
        (importing, compiling: at 999 Hz a ring holds under a second), and
        ``on_exec`` is called as a target execs. Safe to call twice."""
        if self._taker is None and self._rings:
            self._stop_fds = os.pipe()  # written at close: ends the thread's poll at once
            self._taker = threading.Thread(
                target=self._take_every, args=(every_s,), name="bpftop-rings", daemon=True
            )
            self._taker.start()

    def _take_every(self, every_s: float) -> None:
        """Take every ring each ``every_s``, and at once when an exec ring has
        a record (each wakes poll(2)): ``on_exec`` then hears of a target's
        exec within a millisecond or so, not at the next take."""
        poller = select.poll()
        for fd in (self._stop_fds[0], *(ring.fd for ring in self._exec_rings)):
            poller.register(fd, select.POLLIN)
        next_s = time.monotonic() + every_s
        while not self._stop_taking.is_set():
            poller.poll(max(0.0, next_s - time.monotonic()) * 1000)
            if self._stop_taking.is_set():
                return
            if time.monotonic() >= next_s:
                next_s = time.monotonic() + every_s
            told = self._take_rings()
            if told and self.on_exec is not None:
                self.on_exec()
            # Rest: other processes' execs wake this too; a target that execs
            # all the time makes a tick at most every EXEC_TELL_GAP_S.
            self._stop_taking.wait(EXEC_TELL_GAP_S if told else EXEC_WAKE_GAP_S)

    def _take_rings(self) -> bool:
        """Take every ring (the samples first); True if a target named by pid exec'd."""
        with self._taking:
            for ring in self._rings.values():
                if self._lost_readable:  # read before the take: all it counts is before the head
                    self._lost_taken += ring.lost_since()
                chunk = ring.take()
                if chunk:
                    self._taken.append(chunk)
            return self._take_execs()  # after the samples: every exec before them is in

    def _take_execs(self) -> bool:
        """Take the exec rings; True if a target named by pid exec'd (not
        merely a process -a keeps: it would tell of every exec on the system)."""
        found = False
        for ring in self._exec_rings:
            for record in self._parse_execs(ring.take()):
                self._execs_taken.append(record)
                found = found or record.tgid in self.targets
        return found

    def take_execs(self) -> tuple[ExecRecord, ...]:
        """The targets' execs since the last drain or call (every one that
        happened before this call), without touching the sample rings."""
        with self._taking:
            self._take_execs()
            taken, self._execs_taken = tuple(self._execs_taken), []
        return taken

    def drain(self) -> PerfDrain:
        """The target samples, execs and lost counts of every ring since the last drain."""
        self._take_rings()
        with self._taking:
            chunks, self._taken = self._taken, []
            execs, self._execs_taken = tuple(self._execs_taken), []
            lost, self._lost_taken = self._lost_taken, 0
        samples: list[PerfSample] = []
        dropped = 0
        for chunk in chunks:
            for sample in self._parse(chunk):
                if sample.stack_bytes:
                    if self.stack_budget_bytes >= len(sample.stack_bytes):
                        self.stack_budget_bytes -= len(sample.stack_bytes)
                    else:
                        dropped += 1
                        sample = replace(sample, stack_bytes=b"")
                samples.append(sample)
        in_records, self._lost = self._lost, 0
        return PerfDrain(
            tuple(samples), lost if self._lost_readable else in_records, dropped, execs
        )

    def _parse_execs(self, chunk: bytes) -> Iterable[ExecRecord]:
        """The targets' exec records (PERF_RECORD_COMM with the exec flag) in
        an exec ring's chunk: {pid, tid, comm (padded to 8 bytes)}, then the
        sample_id trailer {pid, tid, time}. Lost ones are counted in ``execs_lost``."""
        at = 0
        while at + 8 <= len(chunk):
            kind, misc, size = struct.unpack_from("<IHH", chunk, at)
            if size < 8:
                break
            if kind == PERF_RECORD_COMM and misc & PERF_RECORD_MISC_COMM_EXEC and size >= 32:
                (tgid,) = struct.unpack_from("<I", chunk, at + 8)
                (time_ns,) = struct.unpack_from("<Q", chunk, at + size - 8)
                if self._keep(tgid):
                    yield ExecRecord(tgid, time_ns)
            elif kind == PERF_RECORD_LOST:
                self.execs_lost += struct.unpack_from("<Q", chunk, at + 16)[0]
            at += size

    def _parse(self, chunk: bytes) -> Iterable[PerfSample]:
        at = 0
        while at + 8 <= len(chunk):
            kind, _misc, size = struct.unpack_from("<IHH", chunk, at)
            if size < 8:
                break  # never happens with a sane kernel; stop rather than spin
            if kind == PERF_RECORD_SAMPLE:
                sample = self._sample(chunk, at + 8)
                if sample is not None:
                    yield sample
            elif kind == PERF_RECORD_LOST:
                self._lost += struct.unpack_from("<Q", chunk, at + 16)[0]
            at += size

    def _keep(self, tgid: int) -> bool:
        return tgid in self.targets or (self.all_processes and tgid != 0)

    def _sample(self, rec: bytes, at: int) -> PerfSample | None:
        """One PERF_RECORD_SAMPLE's body (fields in sample_type bit order)."""
        _ip, tgid, tid, time_ns, cpu, _res, nr = struct.unpack_from("<QIIQIIQ", rec, at)
        if not self._keep(tgid):
            return None
        at += 40
        chain = struct.unpack_from(f"<{nr}Q", rec, at)
        at += 8 * nr
        (abi,) = struct.unpack_from("<Q", rec, at)
        at += 8
        regs = None
        if abi:
            bp, sp, ip = struct.unpack_from("<QQQ", rec, at)
            regs = UserRegs(ip=ip, sp=sp, bp=bp)
            at += 24
        (size,) = struct.unpack_from("<Q", rec, at)
        copied = b""
        if size:
            (used,) = struct.unpack_from("<Q", rec, at + 8 + size)
            copied = rec[at + 8 : at + 8 + min(used, size)]
        kernel, user = split_callchain(chain)
        return PerfSample(tgid, tid, cpu, time_ns, kernel, user, regs, copied)

    def close(self) -> None:
        """Stop the ring thread, unmap and close every ring; safe to call twice."""
        self._stop_taking.set()
        if self._stop_fds[1] >= 0:
            os.write(self._stop_fds[1], b"x")
        if self._taker is not None and self._taker is not threading.current_thread():
            self._taker.join()
        for fd in self._stop_fds:
            if fd >= 0:
                os.close(fd)
        self._stop_fds = (-1, -1)
        with self._taking:
            rings, self._rings = [*self._rings.values(), *self._exec_rings], {}
            self._exec_rings, self._taken, self._execs_taken = [], [], []
        for ring in rings:
            ring.close()

    def __enter__(self) -> PerfSampler:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def exec_attr() -> PerfAttr:
    """A dummy event (no samples) that writes a COMM record at each exec on
    its CPU, with the exec's pid, tid and CLOCK_MONOTONIC time after it."""
    attr = PerfAttr(type=PERF_TYPE_SOFTWARE, config=PERF_COUNT_SW_DUMMY)
    attr.size = ct.sizeof(PerfAttr)
    attr.sample_type = SAMPLE_TID | SAMPLE_TIME
    attr.flags = (
        ATTR_DISABLED | ATTR_COMM | ATTR_COMM_EXEC | ATTR_SAMPLE_ID_ALL | ATTR_USE_CLOCKID
        | ATTR_WATERMARK
    )  # fmt: skip
    attr.wakeup_events = 1  # (the union's wakeup_watermark: each record wakes poll)
    attr.clockid = CLOCK_MONOTONIC
    return attr


def split_callchain(chain: Iterable[int]) -> tuple[Addresses, Addresses]:
    """A callchain with context markers -> (kernel, user) addresses, leaf first."""
    kernel: list[int] = []
    user: list[int] = []
    into: list[int] | None = None
    for address in chain:
        if address >= CONTEXT_MAX:
            into = (
                kernel if address == CONTEXT_KERNEL else user if address == CONTEXT_USER else None
            )
        elif into is not None:
            into.append(address)
    return tuple(kernel), tuple(user)


def ring_pages_for(sample_hz: int, stack_bytes: int) -> int:
    """Data pages (a power of two, 16..4096) for RING_HOLDS_S of samples at ``sample_hz``."""
    record_bytes = stack_bytes + 2048  # the copy, a deep callchain, the fixed fields
    need = sample_hz * record_bytes * RING_HOLDS_S / mmap.PAGESIZE
    pages = 16
    while pages < need and pages < 4096:
        pages *= 2
    return pages


def _ioctl(fd: int, request: int) -> None:
    if _libc.ioctl(ct.c_int(fd), ct.c_ulong(request), ct.c_int(0)) < 0:
        err = ct.get_errno()
        raise PerfEventError(f"perf_event ioctl failed: {os.strerror(err)}", "check kernel support")
