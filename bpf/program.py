"""The compiled BPF program and every kernel resource it owns.

:class:`CpuSampler` compiles ``bpftop.bpf.c`` once, attaches a cpu-clock
perf event on every CPU (filtered in the kernel to the target tgids) and the
``sched_process_exit`` tracepoint, and drains the maps into a :class:`RawTick`
each tick. ``close()`` (or leaving the ``with`` block) detaches everything.
"""

from __future__ import annotations

import contextlib
import ctypes as ct
import errno
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from bpftop.bpf.capture import capture_stderr, first_useful_line
from bpftop.bpf.environment import choose_headers, ensure_tracefs, import_bcc
from bpftop.bpf.errors import BpfLoadError
from bpftop.bpf.raw import Addresses, ExitEvent, MapUsage, RawSample, RawTick
from bpftop.bpf.stats import ProgStats, disable_run_stats, enable_run_stats, prog_stats
from bpftop.bpf.unwinder import MODES, WALKER_ID_BIT, Unwinder

PROGRAM_DIR = Path(__file__).resolve().parent
PROGRAM_FILE = PROGRAM_DIR / "bpftop.bpf.c"
WALKER_FILE = PROGRAM_DIR / "unwind.bpf.c"  # appended to the program (see its header)
EVENT_EXIT = 1  # bpftop.h
SETTLE_S = 0.001  # after a generation flip, let in-flight handlers finish
_MAP_KINDS = {1: "hash", 2: "array", 4: "perf_event_array", 6: "percpu_array", 7: "stack_trace"}


class CpuSampler:
    """CPU sampling of the target processes with in-kernel aggregation."""

    def __init__(
        self,
        sample_hz: int,
        *,
        counts_size: int = 65536,
        stack_storage_size: int = 32768,
        targets_size: int = 1024,
        source: Path = PROGRAM_FILE,
        unwind: str = "fp",
        unwind_rows: int = 1 << 20,
    ) -> None:
        if unwind not in MODES:
            raise ValueError(f"unwind mode {unwind!r} is not one of {sorted(MODES)}")
        self.sample_hz = sample_hz
        self.unwind = unwind
        self.unwinder: Unwinder | None = None  # the .eh_frame walker, once loaded
        self.defines = {
            "COUNTS_SIZE": counts_size,
            "STACK_STORAGE_SIZE": stack_storage_size,
            "TARGETS_SIZE": targets_size,
            "UNWIND_ROWS_SIZE": unwind_rows if unwind != "fp" else 1,
        }
        self.source = source
        self.header_note = ""
        self._bpf: Any = None
        self._sample_fn: Any = None
        self._stats_fd: int | None = None
        self._drained: dict[str, int] = {}
        self._gen = 0
        self._lost = 0
        self._exits: list[ExitEvent] = []
        self._dropped_seen = 0
        self._last_drain = time.monotonic()

    @property
    def probe(self) -> str:
        return f"profile:hz:{self.sample_hz}"

    @property
    def loaded(self) -> bool:
        """True from a successful load() until close()."""
        return self._bpf is not None

    @property
    def generation(self) -> int:
        """The generation (0/1) of maps the kernel is filling right now."""
        return self._gen

    def program_text(self) -> str:
        """The final program as BCC compiles it (``--print-bpf``)."""
        defines = "".join(f"#define {k} {v}\n" for k, v in self.defines.items())
        return f"/* -D flags */\n{defines}\n{self._source_text()}"

    def _source_text(self) -> str:
        """The program; the walker is appended when it calls the walker's hook."""
        text = self.source.read_text()
        if not _calls_walker(text):
            return text
        return f"{text}\n/* {WALKER_FILE.name} */\n{WALKER_FILE.read_text()}"

    def load(self) -> None:
        """Compile and load (slow: ~3 s), then attach. Raises BpfLoadError."""
        bcc = import_bcc()
        headers = choose_headers()
        self.header_note = headers.note
        ensure_tracefs()
        cflags = [f"-D{k}={v}" for k, v in self.defines.items()]
        cflags += [f"-I{PROGRAM_DIR}", "-Wno-macro-redefined"]
        failure: Exception | None = None
        with _kernel_source(headers.path if headers.fallback else None), capture_stderr() as log:
            try:
                self._bpf = bcc.BPF(text=self._source_text().encode(), cflags=cflags)  # type: ignore[attr-defined]
                # BCC loads programs lazily at attach time; load now, so the
                # verifier speaks while its log is being captured.
                self._sample_fn = self._bpf.load_func(b"on_cpu_sample", bcc.BPF.PERF_EVENT)  # type: ignore[attr-defined]
                if self.unwind != "fp" and _calls_walker(self.source.read_text()):
                    self.unwinder = Unwinder(self._bpf, bcc.BPF.PERF_EVENT, self.unwind)  # type: ignore[attr-defined]
                self._bpf[b"events"].open_perf_buffer(self._on_event, lost_cb=self._on_lost)
            except Exception as exc:
                failure = exc
        if failure is not None:  # the log is complete only once capturing ends
            self.close()
            raise _load_error(failure, log.text)
        self._stats_fd = enable_run_stats()

    def set_targets(self, pids: Iterable[int]) -> None:
        targets = self._bpf[b"targets"]
        targets.clear()
        for pid in pids:
            targets[ct.c_uint32(pid)] = ct.c_uint8(1)

    def start(self) -> None:
        """Attach the cpu-clock perf event on every CPU."""
        bcc = import_bcc()
        try:
            self._bpf.attach_perf_event(
                ev_type=bcc.PerfType.SOFTWARE,  # type: ignore[attr-defined]
                ev_config=bcc.PerfSWConfig.CPU_CLOCK,  # type: ignore[attr-defined]
                fn_name=b"on_cpu_sample",
                sample_freq=self.sample_hz,
            )
        except Exception as exc:
            raise BpfLoadError(
                f"cannot attach the cpu-clock perf event: {exc}",
                "check perf_event_paranoid and that the kernel has perf events",
            ) from None
        self._last_drain = time.monotonic()

    def drain(self) -> RawTick:
        """Take everything counted since the last drain, exactly once."""
        old = self._gen
        self._gen ^= 1
        self._bpf[b"control"][ct.c_int(0)] = ct.c_uint32(self._gen)
        time.sleep(SETTLE_S)
        counts = self._bpf[f"counts{old}".encode()]
        walked = self.unwinder.take_stacks(old) if self.unwinder else {}
        stacks = _StackReader(self._bpf[f"stacks{old}".encode()], walked)
        entries = _drain_hash(counts)
        samples = tuple(stacks.sample(key, int(value)) for key, value in entries)
        self._drained = {"counts": len(entries), "stacks": stacks.distinct}
        _clear_stacks(self._bpf[f"stacks{old}".encode()])
        self._bpf.perf_buffer_poll(timeout=0)
        now = time.monotonic()
        tick = RawTick(
            samples=samples,
            exits=tuple(self._exits),
            lost_events=self._lost,
            dropped_samples=self._take_dropped(),
            interval_s=now - self._last_drain,
        )
        self._exits.clear()
        self._lost = 0
        self._last_drain = now
        return tick

    def entries(self, map_name: str) -> int:
        """Entries in one map right now (walks the map: for tests and diagnostics)."""
        return sum(1 for _ in self._bpf[map_name.encode()])

    def map_usage(self) -> tuple[MapUsage, ...]:
        """Every map of ours; sample and stack maps as of the last drain."""
        usage = []
        for name in ("counts", "stacks", "targets", "control", "drops", "events"):
            table = self._bpf[(name + "0" if name in ("counts", "stacks") else name).encode()]
            used = self._drained.get(name, 0)
            if name == "targets":
                used = self.entries(name)
            elif name in ("control", "drops", "events"):
                used = int(table.max_entries)  # arrays: every slot exists
            usage.append(
                MapUsage(
                    name=name,
                    kind=_MAP_KINDS.get(int(table.ttype), str(table.ttype)),
                    used=used,
                    max_entries=int(table.max_entries),
                    key_size=ct.sizeof(table.Key),
                    value_size=ct.sizeof(table.Leaf),
                )
            )
        return tuple(usage)

    def prog_stats(self) -> ProgStats:
        """Cumulative run time and runs of all our programs (needs run stats on)."""
        total = ProgStats()
        for fn in self._bpf.funcs.values():
            total += prog_stats(fn.fd)
        return total

    def close(self) -> None:
        """Detach every probe and free the program; safe to call twice."""
        if self.unwinder is not None:
            self.unwinder.close()
            self.unwinder = None
        if self._bpf is not None:
            bpf, self._bpf = self._bpf, None
            bpf.cleanup()
        disable_run_stats(self._stats_fd)
        self._stats_fd = None

    def __enter__(self) -> CpuSampler:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _take_dropped(self) -> int:
        total = int(self._bpf[b"drops"].sum(ct.c_int(0)).value)
        delta, self._dropped_seen = total - self._dropped_seen, total
        return delta

    def _on_event(self, cpu: int, data: Any, size: int) -> None:
        ev = self._bpf[b"events"].event(data)
        if ev.kind == EVENT_EXIT:
            self._exits.append(ExitEvent(ev.tgid, ev.tid, ev.comm.decode(errors="replace")))

    def _on_lost(self, lost: int) -> None:
        self._lost += lost


class _StackReader:
    """Reads stack ids of one generation's stack map, once per id per drain."""

    def __init__(self, table: Any, walked: dict[int, Addresses] | None = None) -> None:
        self._table = table
        self._cache: dict[int, Addresses] = {}
        self._walked = walked or {}

    @property
    def distinct(self) -> int:
        return len(self._cache)

    def read(self, stack_id: int) -> tuple[Addresses, str]:
        if stack_id < 0:
            return (), errno.errorcode.get(-stack_id, str(stack_id))
        if stack_id & WALKER_ID_BIT:  # from the .eh_frame walker's own store
            walked = self._walked.get(stack_id)
            return (walked, "") if walked is not None else ((), "ENOENT")
        found = self._cache.get(stack_id)
        if found is None:
            try:
                found = tuple(self._table.walk(stack_id))
            except KeyError:
                return (), "ENOENT"
            self._cache[stack_id] = found
        return found, ""

    def sample(self, key: Any, count: int) -> RawSample:
        user, user_err = self.read(key.user_stack_id)
        kernel, kernel_err = self.read(key.kernel_stack_id)
        if kernel_err == "EFAULT":
            kernel_err = ""  # sampled in user mode: there is no kernel stack
        return RawSample(key.tgid, key.tid, user, kernel, count, user_err, kernel_err)


def _calls_walker(program: str) -> bool:
    """True for a program with the walker's hook (a test's own program may lack it)."""
    return "unwind_user_stack" in program


def _clear_stacks(table: Any) -> None:
    """Empty a stack map (BCC's ``StackTrace.clear()`` does nothing)."""
    for key in list(table.keys()):
        with contextlib.suppress(KeyError):
            del table[key]


def _drain_hash(table: Any) -> list[tuple[Any, Any]]:
    try:
        return list(table.items_lookup_and_delete_batch())
    except Exception:  # kernels without batch ops: inactive map, so no race
        items = [(k, v.value) for k, v in table.items()]
        table.clear()
        return items


class _kernel_source:
    """Set BCC_KERNEL_SOURCE for the duration of a compile (libbcc reads getenv)."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._old: str | None = None

    def __enter__(self) -> None:
        import os

        self._old = os.environ.get("BCC_KERNEL_SOURCE")
        if self._path is not None:
            os.environ["BCC_KERNEL_SOURCE"] = str(self._path)

    def __exit__(self, *exc: object) -> None:
        import os

        if self._old is None:
            os.environ.pop("BCC_KERNEL_SOURCE", None)
        else:
            os.environ["BCC_KERNEL_SOURCE"] = self._old


def _load_error(exc: Exception, log: str) -> BpfLoadError:
    line = first_useful_line(log) or str(exc).splitlines()[0]
    return BpfLoadError(
        f"the kernel rejected bpftop's BPF program: {line}",
        "run with --print-bpf to see the program; check dmesg and kernel BPF support",
    )
