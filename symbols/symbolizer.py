"""The front door of ``bpftop.symbols``: addresses in, frames out.

Owns :class:`Symbolizer`, which the collector thread calls once per tick for
new stacks. It keeps one :class:`ProcessSymbolizer` per live pid (replaced
when the pid is recycled: processes are keyed by (pid, start time)), a shared
:class:`ElfCache` so a library is parsed once for all processes, and the
kernel symbol table (loaded lazily, once). Nothing here raises for bad input.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from bpftop.symbols import kallsyms
from bpftop.symbols.elf.disk_cache import DiskCache, default_cache_dir
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.frame import Frame
from bpftop.symbols.kallsyms import KALLSYMS_PATH, KernelSymbols
from bpftop.symbols.proc.images import ImageStore
from bpftop.symbols.process import (
    MIN_REREAD_INTERVAL_S,
    PROC_ROOT,
    ProcessSymbolizer,
    SourceLine,
    read_start_time,
)

MAX_CACHED_KERNEL_ADDRESSES = 200_000
MAX_PARENTS = 65536  # forks remembered (see Symbolizer.adopt)
MAX_PINNED_IMAGES = 256  # symbolizers of earlier images kept (see Symbolizer._process)


class Symbolizer:
    """Resolves user stacks per process and kernel stacks via kallsyms.

    Stacks are given innermost first; every frame but the innermost is a
    return address and is looked up at ``addr - 1`` (offsets are still
    reported relative to the original address). Used from one thread.
    """

    def __init__(
        self,
        *,
        elf_cache: ElfCache | None = None,
        kallsyms_path: str = KALLSYMS_PATH,
        proc_root: str = PROC_ROOT,
        clock: Callable[[], float] = time.monotonic,
        min_reread_interval_s: float = MIN_REREAD_INTERVAL_S,
        symbol_cache_dir: str | None = None,
        inline_frames: bool = True,
        prefetch_kernel: bool = False,
    ) -> None:
        """``symbol_cache_dir``: where indexes persist across runs (None: the
        ``BPFTOP_SYMBOL_CACHE_DIR`` environment variable, else
        /var/cache/bpftop/symbols; an empty variable turns it off). Ignored
        when ``elf_cache`` is given. ``inline_frames``: expand addresses in
        inlined code into their inline chains (see :meth:`user_frames`).
        ``prefetch_kernel``: start reading the kernel symbol table now, on a
        thread (or take the read :func:`~bpftop.symbols.kallsyms.read_ahead`
        started), so the first tick need not wait for it."""
        self.inline_frames = inline_frames
        if elf_cache is None:
            directory = symbol_cache_dir or default_cache_dir()
            disk = DiskCache(directory) if directory else None
            elf_cache = ElfCache(disk_cache=disk)
        self.elf_cache = elf_cache
        self._kallsyms_path = kallsyms_path
        self._proc_root = proc_root
        self._clock = clock
        self._min_reread_interval_s = min_reread_interval_s
        self._processes: dict[int, ProcessSymbolizer] = {}
        self.images = ImageStore()  # each image of a process that exec'd, read while it ran
        self._by_image: dict[tuple[int, int], ProcessSymbolizer] = {}
        self._current_image: dict[int, int] = {}  # pid -> the image its maps were read in
        self._parents: dict[int, int] = {}  # forked child -> parent (see adopt)
        self._kernel: KernelSymbols | None = None
        self._kernel_reading = kallsyms.reading(kallsyms_path) if prefetch_kernel else None
        self._kernel_frames: dict[tuple[int, bool], Frame] = {}

    def prepare(self, pid: int, *, preload: bool = False) -> ProcessSymbolizer:
        """Read ``pid``'s maps now (call it as soon as a pid is seen).

        A known process is kept while its (pid, start time) still matches or
        it has exited; a recycled pid gets a fresh symbolizer. With
        ``preload``, every executable mapping is indexed at once, so even a
        process that exits soon after resolves fully.
        """
        current = self._processes.get(pid)
        start_time = read_start_time(pid, self._proc_root)
        if current is not None and (start_time is None or start_time == current.start_time):
            return current
        process = self._new_process(pid)
        self._processes[pid] = process
        self._inherit(process)
        if preload:
            process.preload()
        return process

    def _new_process(self, pid: int) -> ProcessSymbolizer:
        return ProcessSymbolizer(
            pid,
            self.elf_cache,
            proc_root=self._proc_root,
            inline_frames=self.inline_frames,
            clock=self._clock,
            min_reread_interval_s=self._min_reread_interval_s,
        )

    def note_image(self, pid: int, image: int) -> None:
        """The maps :meth:`prepare` read for ``pid`` are of its image ``image``:
        its stacks of other images are named from :attr:`images`."""
        self._current_image[pid] = image
        if len(self._current_image) > MAX_PARENTS:
            del self._current_image[next(iter(self._current_image))]

    def adopt(self, child: int, parent: int) -> None:
        """``child`` was forked by ``parent``: until (or unless) its own maps
        can be read, it is named from the parent's (what it had at the fork)."""
        if child == parent:
            return
        self._parents[child] = parent
        if len(self._parents) > MAX_PARENTS:  # the oldest forks (threads, mostly) go
            del self._parents[next(iter(self._parents))]
        known = self._processes.get(child)
        if known is not None:
            self._inherit(known)

    def _inherit(self, process: ProcessSymbolizer) -> None:
        parent_pid = self._parents.get(process.pid)
        if process.maps is None and parent_pid is not None:
            parent = self._processes.get(parent_pid)
            if parent is None:  # a grandparent's child exited as well: go up
                parent = self.prepare(parent_pid)
            process.inherit(parent)

    def process(self, pid: int) -> ProcessSymbolizer | None:
        """The symbolizer for ``pid`` if :meth:`prepare` made one."""
        return self._processes.get(pid)

    def user_frames(
        self, pid: int, addrs: Sequence[int], image: int | None = None
    ) -> tuple[Frame, ...]:
        """Frames for a user stack of ``pid`` (innermost first, same order).

        With ``inline_frames`` (the default) an address that DWARF places
        inside inlined code gives MORE than one frame: its inline chain,
        innermost first and marked ``inlined=True``, then the frame of the
        function that holds the code. Without DWARF it is one frame per address.
        """
        return self._process(pid, image).symbolize(addrs)

    def in_fileless_code(self, pid: int, addr: int, image: int | None = None) -> bool:
        """True when ``addr`` lies in code no file holds (JIT code, the [vdso])
        of ``pid`` (of its image ``image``)."""
        return self._process(pid, image).in_fileless_code(addr)

    def source_lines(
        self, pid: int, addrs: Sequence[int], image: int | None = None
    ) -> tuple[SourceLine | None, ...]:
        """``(file, line)`` or None for each frame :meth:`user_frames` gives
        for the same stack (same length, same order).

        Computed from DWARF lazily, once per address, and cached: call it for
        the frames on screen, never per sample.
        """
        process = self._process(pid, image)
        lines: list[SourceLine | None] = []
        for i, addr in enumerate(addrs):
            lines.extend(process.source_lines(addr, innermost=i == 0))
        return tuple(lines)

    def with_source_lines(
        self, pid: int, addrs: Sequence[int], image: int | None = None
    ) -> tuple[Frame, ...]:
        """:meth:`user_frames` with ``file``/``line`` filled where DWARF knows them."""
        frames = self.user_frames(pid, addrs, image)
        lines = self.source_lines(pid, addrs, image)
        return tuple(
            frame if where is None else dataclasses.replace(frame, file=where[0], line=where[1])
            for frame, where in zip(frames, lines, strict=True)
        )

    def _process(self, pid: int, image: int | None = None) -> ProcessSymbolizer:
        """``pid``'s symbolizer; with ``image``, that image's when it was read
        while it ran (:attr:`images`), else the process's current one."""
        if image is not None and image != self._current_image.get(pid):  # not prepare()'s
            pinned = self._by_image.get((pid, image))
            if pinned is not None:
                return pinned
            captured = self.images.get(pid, image)
            if captured is not None:
                pinned = self._new_process(pid)
                pinned.pin_image(captured)
                if len(self._by_image) >= MAX_PINNED_IMAGES:
                    del self._by_image[next(iter(self._by_image))]
                self._by_image[(pid, image)] = pinned
                return pinned
        process = self._processes.get(pid)
        return process if process is not None else self.prepare(pid)

    def reread(self, pid: int) -> None:
        """Read ``pid``'s maps again (libraries mapped since they were read),
        every executable mapping indexed at once; if it is gone, what was
        read before is kept (a program that ran for a millisecond is named
        from it)."""
        before = self._processes.pop(pid, None)
        if self.prepare(pid, preload=True).maps is None and before is not None:
            self._processes[pid] = before

    def forget(self, pid: int) -> None:
        """Drop what is known about ``pid`` (it exited, or it exec'd)."""
        self._processes.pop(pid, None)
        self._parents.pop(pid, None)

    @property
    def kernel_symbols(self) -> KernelSymbols:
        """The kernel symbol table, read on first use (or prefetched)."""
        if self._kernel is None:
            reading, self._kernel_reading = self._kernel_reading, None
            path = self._kallsyms_path
            self._kernel = reading.result() if reading is not None else KernelSymbols.load(path)
        return self._kernel

    def kernel_frames(self, addrs: Sequence[int]) -> tuple[Frame, ...]:
        """Frames for a kernel stack (innermost first, same order)."""
        return tuple(self._kernel_frame(addr, i == 0) for i, addr in enumerate(addrs))

    def _kernel_frame(self, addr: int, innermost: bool) -> Frame:
        key = (addr, innermost)
        frame = self._kernel_frames.get(key)
        if frame is None:
            if innermost or addr <= 0:
                frame = self.kernel_symbols.lookup(addr)
            else:
                looked = self.kernel_symbols.lookup(addr - 1)
                frame = dataclasses.replace(looked, offset=looked.offset + 1)
            if len(self._kernel_frames) >= MAX_CACHED_KERNEL_ADDRESSES:
                self._kernel_frames.clear()
            self._kernel_frames[key] = frame
        return frame
