"""Symbolizing the user-space addresses of one process.

Owns :class:`ProcessSymbolizer`: one process, identified by (pid, start time
from /proc/PID/stat field 22). It reads the maps when created, so a process
that exits later still resolves; opens binaries through
/proc/PID/map_files/<range>, then /proc/PID/root/<path>, then (identity
checked) the plain path; re-reads the maps once, rate-limited, for an address
outside every mapping (dlopen); and caches a frame per address.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from bpftop.symbols.addresses import Address
from bpftop.symbols.elf import ElfError, ElfIndex
from bpftop.symbols.elf_cache import ElfCache, FileId
from bpftop.symbols.frame import Frame, Unresolved
from bpftop.symbols.maps import MapEntry, ProcessMaps

PROC_ROOT = "/proc"
MIN_REREAD_INTERVAL_S = 0.5
MAX_CACHED_ADDRESSES = 200_000
VDSO = "[vdso]"
STAT_START_TIME_FIELD = 22  # 1-based, as in proc(5)

IndexResult = ElfIndex | ElfError


def read_start_time(pid: int, proc_root: str = PROC_ROOT) -> int | None:
    """The start time (clock ticks after boot) of ``pid``, or None if it is gone."""
    try:
        with open(f"{proc_root}/{pid}/stat", "rb") as stream:
            text = stream.read().decode("ascii", "replace")
        # The command name (field 2) may hold spaces and parentheses.
        fields = text[text.rindex(")") + 2 :].split()
        return int(fields[STAT_START_TIME_FIELD - 3])
    except (OSError, ValueError, IndexError):
        return None


class ProcessSymbolizer:
    """Turns the stack addresses of one process into frames."""

    def __init__(
        self,
        pid: int,
        cache: ElfCache,
        *,
        proc_root: str = PROC_ROOT,
        clock: Callable[[], float] = time.monotonic,
        min_reread_interval_s: float = MIN_REREAD_INTERVAL_S,
    ) -> None:
        self.pid = pid
        self._cache = cache
        self._proc = f"{proc_root}/{pid}"
        self._proc_root = proc_root
        self._clock = clock
        self._min_reread_interval_s = min_reread_interval_s
        self.start_time: int | None = read_start_time(pid, proc_root)
        self.maps: ProcessMaps | None = self._read_maps()
        self.gone = self.maps is None
        self.maps_reads = 1
        self._last_read_s = clock()
        self._file_ids: dict[MapEntry, FileId] = {}
        self._indexes: dict[MapEntry, IndexResult] = {}
        self._frames: dict[tuple[int, bool], Frame] = {}
        self._remember_file_ids()

    @property
    def key(self) -> tuple[int, int | None]:
        """(pid, start time): what tells this process from a recycled pid."""
        return self.pid, self.start_time

    def is_current(self) -> bool:
        """True while the pid still names this very process."""
        return not self.gone and read_start_time(self.pid, self._proc_root) == self.start_time

    def symbolize(self, addrs: Sequence[int]) -> tuple[Frame, ...]:
        """Frames for a stack given innermost first, in the same order."""
        return tuple(self.frame(addr, innermost=i == 0) for i, addr in enumerate(addrs))

    def frame(self, addr: int, *, innermost: bool) -> Frame:
        """One frame; non-innermost addresses are return addresses (looked up at -1)."""
        key = (addr, innermost)
        cached = self._frames.get(key)
        if cached is not None:
            return cached
        if innermost or addr <= 0:
            frame = self._resolve(Address(addr))
        else:
            looked = self._resolve(Address(addr - 1))
            frame = dataclasses.replace(looked, offset=looked.offset + 1)
        if frame.reason is not Unresolved.UNMAPPED or self.gone:
            if len(self._frames) >= MAX_CACHED_ADDRESSES:
                self._frames.clear()
            self._frames[key] = frame
        return frame

    def preload(self) -> None:
        """Index every executable file mapping now (while the process lives)."""
        if self.maps is not None:
            for entry in self.maps.entries:
                if entry.executable and entry.is_file:
                    self._index_for(entry)

    def _resolve(self, addr: Address) -> Frame:
        if self.maps is None:
            return Frame(None, "", addr, reason=Unresolved.PROCESS_GONE)
        entry = self._entry_for(addr)
        if entry is None:
            return Frame(None, "", addr, reason=Unresolved.UNMAPPED)
        if entry.is_file:
            return self._file_frame(entry, addr)
        if entry.path == VDSO:
            return self._vdso_frame(entry, addr)
        return Frame(None, entry.path, entry.file_offset(addr), reason=Unresolved.ANONYMOUS)

    def _file_frame(self, entry: MapEntry, addr: Address) -> Frame:
        file_offset = entry.file_offset(addr)
        index = self._index_for(entry)
        if isinstance(index, ElfError):
            return Frame(None, entry.path, file_offset, reason=index.reason)
        hit = index.lookup_offset(file_offset)
        if hit is None:
            return Frame(None, entry.path, file_offset, reason=Unresolved.NO_SYMBOLS)
        return Frame(hit[0], entry.path, hit[1])

    def _vdso_frame(self, entry: MapEntry, addr: Address) -> Frame:
        index = self._indexes.get(entry)
        if index is None:
            index = self._read_vdso(entry)
            self._indexes[entry] = index
        offset = entry.file_offset(addr)
        if isinstance(index, ElfError):
            return Frame(None, VDSO, offset, reason=index.reason)
        hit = index.lookup_offset(offset)
        if hit is None:
            return Frame(None, VDSO, offset, reason=Unresolved.NO_SYMBOLS)
        return Frame(hit[0], VDSO, hit[1])

    def _read_vdso(self, entry: MapEntry) -> IndexResult:
        try:
            with open(f"{self._proc}/mem", "rb", buffering=0) as mem:
                mem.seek(entry.start)
                data = mem.read(entry.end - entry.start)
        except (OSError, OverflowError) as exc:
            return ElfError(Unresolved.FILE_UNREADABLE, f"vdso: {exc}")
        return self._cache.load_bytes(data)

    def _index_for(self, entry: MapEntry) -> IndexResult:
        index = self._indexes.get(entry)
        if index is None:
            index = self._open_index(entry)
            self._indexes[entry] = index
        return index

    def _open_index(self, entry: MapEntry) -> IndexResult:
        """Open the mapped file by the most faithful path that still works."""
        expected = self._file_ids.get(entry)
        if expected is not None:
            cached = self._cache.get(expected)
            if cached is not None:
                return cached
        candidates: list[tuple[str, FileId | None]] = [
            (f"{self._proc}/map_files/{entry.range_name}", None)
        ]
        candidates.append((f"{self._proc}/root{entry.path}", expected))
        if not entry.deleted:
            candidates.append((entry.path, expected))
        for path, must_match in candidates:
            result = self._cache.load(path, must_match)
            if result is not None:
                return result
        return ElfError(Unresolved.FILE_UNREADABLE, f"cannot open {entry.path}")

    def _entry_for(self, addr: Address) -> MapEntry | None:
        assert self.maps is not None
        entry = self.maps.find(addr)
        if entry is None and self._maybe_reread():
            entry = self.maps.find(addr)
        return entry

    def _maybe_reread(self) -> bool:
        """Re-read the maps (a dlopen?) unless done lately or the process is gone."""
        now = self._clock()
        if self.gone or now - self._last_read_s < self._min_reread_interval_s:
            return False
        self._last_read_s = now
        self.maps_reads += 1
        maps = self._read_maps()
        if maps is None:
            self.gone = True
            return False
        if self.maps is None or maps.entries != self.maps.entries:
            self._frames.clear()
        self.maps = maps
        self._remember_file_ids()
        return True

    def _read_maps(self) -> ProcessMaps | None:
        """The current maps, or None if gone (or the pid now names another process)."""
        if self.start_time is None:
            return None
        try:
            with open(f"{self._proc}/maps", encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
        except OSError:
            return None
        if read_start_time(self.pid, self._proc_root) != self.start_time:
            return None
        return ProcessMaps.from_text(text)

    def _remember_file_ids(self) -> None:
        """Stat executable file mappings now, so they can be checked after exit."""
        if self.maps is None:
            return
        for entry in self.maps.entries:
            if entry.executable and entry.is_file and entry not in self._file_ids:
                file_id = FileId.of_path(f"{self._proc}/map_files/{entry.range_name}")
                if file_id is not None:
                    self._file_ids[entry] = file_id
