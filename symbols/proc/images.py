"""The images of a process that execs: each one's mappings, read while it ran.

A process that execs keeps its pid but gets new mappings; its samples carry
the image they were counted in (how many times it had exec'd). Owns
:class:`ImageMaps` (one image's maps and the identity of each mapped file, so
its stacks are named from its own files after it was replaced) and
:class:`ImageStore`, where a thread that learns of an exec within
milliseconds leaves what it read for the symbolizer's thread. Reading is
thread-safe: it touches no cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from bpftop.symbols.proc.maps import FileId, MapEntry, ProcessMaps

MAX_IMAGES = 4096
"""Images remembered in all (the oldest go first)."""


@dataclass(frozen=True, slots=True)
class ImageMaps:
    """One image of a process: its maps, its executable files' identities and
    its name (``comm``, "" if unread)."""

    maps: ProcessMaps
    file_ids: dict[MapEntry, FileId]
    comm: str = ""


def read_image(pid: int, proc_root: str = "/proc") -> ImageMaps | None:
    """``pid``'s image now, or None (gone, or exiting: no mappings left)."""
    proc = f"{proc_root}/{pid}"
    try:
        with open(f"{proc}/maps", encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError:
        return None
    if not text:
        return None
    maps = ProcessMaps.from_text(text)
    file_ids: dict[MapEntry, FileId] = {}
    for entry in maps.entries:
        if entry.executable and entry.is_file:
            file_id = FileId.of_path(f"{proc}/map_files/{entry.range_name}")
            if file_id is not None:
                file_ids[entry] = file_id
    try:
        with open(f"{proc}/comm", encoding="utf-8", errors="replace") as f:
            comm = f.read().strip()
    except OSError:
        comm = ""
    return ImageMaps(maps, file_ids, comm)


class ImageStore:
    """(pid, image) -> :class:`ImageMaps`, filled from any thread."""

    def __init__(self, max_images: int = MAX_IMAGES) -> None:
        self._images: OrderedDict[tuple[int, int], ImageMaps] = OrderedDict()
        self._comms: OrderedDict[int, str] = OrderedDict()  # pid -> its latest image's name
        self._lock = threading.Lock()
        self._max = max_images

    def put(self, pid: int, image: int, maps: ImageMaps) -> None:
        """Remember ``maps`` as ``pid``'s image ``image``; a second read of the
        same image adds what was mapped since (an image read right at its exec
        has only the program and the dynamic loader; its libraries come later)."""
        with self._lock:
            known = self._images.get((pid, image))
            self._images[(pid, image)] = maps if known is None else merged(known, maps)
            self._images.move_to_end((pid, image))
            while len(self._images) > self._max:
                self._images.popitem(last=False)
            if maps.comm:
                self._comms[pid] = maps.comm
                self._comms.move_to_end(pid)
                while len(self._comms) > self._max:
                    self._comms.popitem(last=False)

    def get(self, pid: int, image: int) -> ImageMaps | None:
        with self._lock:
            return self._images.get((pid, image))

    def comm(self, pid: int) -> str | None:
        """The name of the latest image of ``pid`` read (a process gone before
        anything else read it is named by it), or None."""
        with self._lock:
            return self._comms.get(pid)

    def __len__(self) -> int:
        with self._lock:
            return len(self._images)


def merged(older: ImageMaps, newer: ImageMaps) -> ImageMaps:
    """``newer``'s mappings, and those of ``older`` that none of them overlaps
    (unmapped since: their stacks may still be drained)."""
    fresh = newer.maps.entries
    kept = [
        entry
        for entry in older.maps.entries
        if not any(entry.start < new.end and new.start < entry.end for new in fresh)
    ]
    ids = {e: i for e, i in older.file_ids.items() if e in kept}
    ids.update(newer.file_ids)
    return ImageMaps(ProcessMaps([*fresh, *kept]), ids, newer.comm or older.comm)
