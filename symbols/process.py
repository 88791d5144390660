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
import itertools
import os
import time
from collections.abc import Callable, Sequence

from bpftop.symbols.dwarf.index import DwarfIndex
from bpftop.symbols.elf.debuginfo import inside_root
from bpftop.symbols.elf.index import ElfError, ElfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.frame import Address, ElfVaddr, FileOffset, Frame, Unresolved
from bpftop.symbols.names.demangle import display_and_mangled
from bpftop.symbols.perfmap import PerfMap, perf_map_path, read_nspid
from bpftop.symbols.proc.images import ImageMaps
from bpftop.symbols.proc.maps import FileId, MapEntry, ProcessMaps

PROC_ROOT = "/proc"
MIN_REREAD_INTERVAL_S = 0.5
MAX_CACHED_ADDRESSES = 200_000
VDSO = "[vdso]"
# Reasons that may go away on their own (a dlopen, a JIT writing its map):
# such frames are not cached while the process lives.
TRANSIENT_REASONS = frozenset(
    {Unresolved.UNMAPPED, Unresolved.JIT_NO_PERF_MAP, Unresolved.ANONYMOUS}
)
STAT_START_TIME_FIELD = 22  # 1-based, as in proc(5)

IndexResult = ElfIndex | ElfError
SourceLine = tuple[str, int]


# Unnamed code of a file: shown at its function's start (by .eh_frame), one
# frame per function whichever instruction was sampled or returned to.
BY_FUNCTION = frozenset({Unresolved.NO_SYMBOLS, Unresolved.NOT_COVERED})


def named_frame(symbol: str, module: str, offset: int) -> Frame:
    """A resolved frame, demangled for display, keeping the mangled name."""
    shown, mangled = display_and_mangled(symbol)
    return Frame(shown, module, offset, mangled=mangled)


def _miss(index: ElfIndex) -> Unresolved:
    """Why a lookup in ``index`` found nothing: a file whose full symbol table
    does not cover the address is not a file without symbols."""
    return Unresolved.NOT_COVERED if index.has_full_symtab else Unresolved.NO_SYMBOLS


def _root_path(proc: str) -> str:
    """Where the process's root is (``/proc/PID/root``'s target: ``/``, or a
    chroot's folder); ``/`` when unreadable."""
    try:
        return os.readlink(f"{proc}/root")
    except OSError:
        return "/"


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
        inline_frames: bool = True,
    ) -> None:
        self.pid = pid
        self.inline_frames = inline_frames
        self._cache = cache
        self._proc = f"{proc_root}/{pid}"
        self._proc_root = proc_root
        self._root_path = _root_path(self._proc)
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
        # Chains by address, [0] return addresses, [1] innermost ones: a stack's
        # return addresses are looked up in C (``symbolize``), without a key tuple each.
        self._chains: tuple[dict[int, tuple[Frame, ...]], ...] = ({}, {})
        self._lines: dict[tuple[int, bool], tuple[SourceLine | None, ...]] = {}
        self._pinned = False  # named from an earlier image (pin_image)
        self._remember_file_ids()
        self.nspid = read_nspid(pid, proc_root)
        self.perf_map = PerfMap(perf_map_path(pid, self.nspid, proc_root))
        self._perf_map_read_s: float | None = None
        if not self.gone:
            self._refresh_perf_map()

    def inherit(self, parent: ProcessSymbolizer) -> None:
        """Name this process from ``parent``'s maps: a forked child shares its
        parent's mappings at the fork, so they stand in while its own cannot be
        read (it exited before bpftop saw it). Files are opened through the
        parent's /proc entries or, identity-checked, by path."""
        if self.maps is not None or parent.maps is None:
            return
        self.maps = parent.maps
        self._file_ids = dict(parent._file_ids)
        self._indexes = dict(parent._indexes)
        self._proc = parent._proc
        self._root_path = parent._root_path
        self.perf_map = parent.perf_map
        self._clear_frames()

    def pin_image(self, image: ImageMaps) -> None:
        """Name this process from ``image`` (an earlier image of it, read while
        it ran) and never re-read its maps: files are opened only when they are
        the files that image mapped (identity checked on every path)."""
        self.maps = image.maps
        self._file_ids = dict(image.file_ids)
        self._indexes = {}
        self.gone = True
        self._pinned = True
        self._clear_frames()

    @property
    def key(self) -> tuple[int, int | None]:
        """(pid, start time): what tells this process from a recycled pid."""
        return self.pid, self.start_time

    def in_fileless_code(self, addr: int) -> bool:
        """True when ``addr`` lies in code no file holds (anonymous memory:
        JIT code; the [vdso]), not in a file's mapping or in none (the maps
        are read again, rate-limited, for an address in none)."""
        if self.maps is None:
            return False
        entry = self._entry_for(Address(addr))
        return entry is not None and not entry.is_file

    def symbolize(self, addrs: Sequence[int]) -> tuple[Frame, ...]:
        """Frames for a stack given innermost first, in the same order.

        With ``inline_frames``, an address inside inlined code gives its
        inline chain (innermost first, ``inlined=True``) before its own frame,
        so the result may hold more frames than ``addrs``.
        """
        if not self.inline_frames:
            return tuple(self.frame(addr, innermost=i == 0) for i, addr in enumerate(addrs))
        if not addrs:
            return ()
        frames = list(self.chain(addrs[0], innermost=True))
        known = list(map(self._chains[False].get, itertools.islice(addrs, 1, None)))
        if None not in known:  # every return address cached (a lookup changes nothing)
            frames.extend(itertools.chain.from_iterable(known))  # type: ignore[arg-type]
            return tuple(frames)
        for addr in itertools.islice(addrs, 1, None):
            frames.extend(self.chain(addr, innermost=False))
        return tuple(frames)

    def chain(self, addr: int, *, innermost: bool) -> tuple[Frame, ...]:
        """The inline frames DWARF knows at ``addr`` (innermost first), then its frame."""
        chains = self._chains[innermost]
        cached = chains.get(addr)
        if cached is not None:
            return cached
        base = self.frame(addr, innermost=innermost)
        result: tuple[Frame, ...] = (base,)
        if base.reason is None and base.function is not None:
            inlines = self._dwarf_at(addr, innermost)
            if inlines is not None:
                chain = [
                    Frame(i.function, base.module, base.offset, mangled=i.mangled, inlined=True)
                    for i in inlines[0].inlines(inlines[1])
                ]
                result = (*chain, base)
        if (addr, innermost) in self._frames:  # cacheable exactly when its frame is
            chains[addr] = result
        return result

    def source_lines(self, addr: int, *, innermost: bool) -> tuple[SourceLine | None, ...]:
        """``(file, line)`` for each frame :meth:`chain` gives (or :meth:`frame`
        without inline frames); None where DWARF does not say. Lazy, cached."""
        key = (addr, innermost)
        cached = self._lines.get(key)
        if cached is not None:
            return cached
        count = len(self.chain(addr, innermost=innermost)) if self.inline_frames else 1
        lines: list[SourceLine | None] = [None] * count
        located = self._dwarf_at(addr, innermost)
        if located is not None:
            dwarf, vaddr = located
            lines[0] = dwarf.line(vaddr)
            if self.inline_frames:
                for at, inline in enumerate(dwarf.inlines(vaddr)[: count - 1], start=1):
                    if inline.call_file is not None and inline.call_line:
                        lines[at] = (inline.call_file, inline.call_line)
        result = tuple(lines)
        if key in self._frames:
            self._lines[key] = result
        return result

    def _dwarf_at(self, addr: int, innermost: bool) -> tuple[DwarfIndex, ElfVaddr] | None:
        """The DWARF of the file mapped at ``addr`` and the ELF vaddr to ask it."""
        looked = addr if innermost or addr <= 0 else addr - 1
        entry = None if self.maps is None else self.maps.find(looked)
        if entry is None or not entry.is_file:
            return None
        index = self._index_for(entry)
        if isinstance(index, ElfError):
            return None
        vaddr = index.vaddr_for_offset(
            entry.file_offset(Address(looked)), entry.offset, entry.executable
        )
        dwarf = None if vaddr is None else self._cache.dwarf_for(index)
        return None if dwarf is None or vaddr is None else (dwarf, vaddr)

    def frame(self, addr: int, *, innermost: bool) -> Frame:
        """One frame; non-innermost addresses are return addresses (looked up at -1)."""
        key = (addr, innermost)
        cached = self._frames.get(key)
        if cached is not None:
            return cached
        looked_at = Address(addr if innermost or addr <= 0 else addr - 1)
        frame = self._resolve(looked_at)
        grouped = self._by_function(frame, looked_at) if frame.reason in BY_FUNCTION else None
        if grouped is not None:
            frame = grouped
        elif looked_at != addr:
            frame = dataclasses.replace(frame, offset=frame.offset + 1)
        if frame.reason not in TRANSIENT_REASONS or self.gone:
            if len(self._frames) >= MAX_CACHED_ADDRESSES:
                self._clear_frames()
            self._frames[key] = frame
        return frame

    def _clear_frames(self) -> None:
        self._frames.clear()
        for chains in self._chains:
            chains.clear()
        self._lines.clear()

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
        return self._jit_frame(entry, addr)

    def _jit_frame(self, entry: MapEntry, addr: Address) -> Frame:
        """Anonymous (or ``[anon:...]``) memory: named by the perf map, if
        any. Only executable memory is JIT code without one: a return address
        in the heap or a stack is a walk gone wrong (the mapping's permissions
        are those of now, so a map entry still names code made writable since)."""
        hit = self.perf_map.lookup(addr)
        if hit is None and entry.executable and self._refresh_perf_map():
            hit = self.perf_map.lookup(addr)
        if hit is not None:
            return named_frame(hit[0], f"/tmp/perf-{self.nspid}.map", hit[1])
        if not entry.executable:
            reason = Unresolved.NOT_CODE
        elif self.perf_map.exists:
            reason = Unresolved.ANONYMOUS
        else:
            reason = Unresolved.JIT_NO_PERF_MAP
        return Frame(None, entry.path, entry.file_offset(addr), reason=reason)

    def _refresh_perf_map(self) -> bool:
        """Re-read the perf map if it grew (rate-limited); True if it changed."""
        now = self._clock()
        last = self._perf_map_read_s
        if self.gone or (last is not None and now - last < self._min_reread_interval_s):
            return False
        self._perf_map_read_s = now
        return self.perf_map.refresh()

    def _file_frame(self, entry: MapEntry, addr: Address) -> Frame:
        file_offset = entry.file_offset(addr)
        index = self._index_for(entry)
        if isinstance(index, ElfError):
            return Frame(None, entry.path, file_offset, reason=index.reason)
        hit = index.lookup_offset(file_offset, entry.offset, entry.executable)
        if hit is None:
            return Frame(None, entry.path, file_offset, reason=_miss(index))
        return named_frame(hit[0], entry.path, hit[1])

    def _by_function(self, frame: Frame, addr: Address) -> Frame | None:
        """An unnamed frame of a file at the start of the function holding
        ``addr`` by the file's ``.eh_frame`` FDEs (so unnamed code groups by
        function, not by instruction); None if no FDE covers it."""
        entry = self._entry_for(addr)
        index = None if entry is None or not entry.is_file else self._index_for(entry)
        if entry is None or not isinstance(index, ElfIndex):
            return None
        file_offset = entry.file_offset(addr)
        vaddr = index.vaddr_for_offset(file_offset, entry.offset, entry.executable)
        start = None if vaddr is None else self._cache.function_start(index, vaddr)
        if vaddr is None or start is None:
            return None
        return dataclasses.replace(frame, offset=FileOffset(file_offset - (vaddr - start)))

    def _vdso_frame(self, entry: MapEntry, addr: Address) -> Frame:
        index = self._indexes.get(entry)
        if index is None:
            index = self._read_vdso(entry)
            self._indexes[entry] = index
        offset = entry.file_offset(addr)
        if isinstance(index, ElfError):
            return Frame(None, VDSO, offset, reason=index.reason)
        hit = index.lookup_offset(offset, entry.offset, entry.executable)
        if hit is None:
            return Frame(None, VDSO, offset, reason=_miss(index))
        return named_frame(hit[0], VDSO, hit[1])

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
        # The path as the process sees it: a chroot's files show in the maps
        # with the chroot's folder in front.
        inside = inside_root(entry.path, self._root_path)
        by_range = expected if self._pinned else None  # (another image's range: check)
        candidates: list[tuple[str, FileId | None]] = [
            (f"{self._proc}/map_files/{entry.range_name}", by_range)
        ]
        candidates.append((f"{self._proc}/root{inside}", expected))
        if not entry.deleted:
            candidates.append((entry.path, expected))
        for path, must_match in candidates:
            result = self._cache.load(
                path, must_match, origin=inside, root_prefix=f"{self._proc}/root"
            )
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
            self._clear_frames()
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
        if not text:  # exiting (past its mm) or a zombie: gone, not a process without code
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
