"""The images of a process that execs: a second read of one image adds what
was mapped since; another image's maps stay apart; a pid's name is its latest
image's (what labels a process gone before its label was asked for)."""

from __future__ import annotations

import os
from pathlib import Path

from bpftop.symbols.proc.images import ImageMaps, ImageStore, read_image
from bpftop.symbols.proc.maps import MapEntry, ProcessMaps


def entry(start: int, end: int, path: str) -> MapEntry:
    return MapEntry(start, end, "r-xp", 0, "08:01", 1, path)


def image(*entries: MapEntry) -> ImageMaps:
    return ImageMaps(ProcessMaps(entries), {})


def test_a_later_read_of_one_image_adds_its_libraries_and_replaces_overlaps() -> None:
    store = ImageStore()
    store.put(7, 1, image(entry(0x1000, 0x2000, "/bin/prog"), entry(0x8000, 0x9000, "/ld.so")))
    store.put(7, 1, image(entry(0x1000, 0x2000, "/bin/prog"), entry(0x8800, 0x9800, "/libc")))
    merged = store.get(7, 1)
    assert merged is not None
    assert [e.path for e in merged.maps.entries] == ["/bin/prog", "/libc"]  # ld.so overlapped


def test_images_of_one_pid_stay_apart_and_the_oldest_go_first() -> None:
    store = ImageStore(max_images=2)
    store.put(7, 1, image(entry(0x1000, 0x2000, "/bin/a")))
    store.put(7, 2, image(entry(0x1000, 0x2000, "/bin/b")))
    store.put(8, 0, image(entry(0x1000, 0x2000, "/bin/c")))
    assert store.get(7, 1) is None
    found = store.get(7, 2)
    assert found is not None and found.maps.entries[0].path == "/bin/b"


def test_read_image_reads_a_live_process_and_not_a_gone_one() -> None:
    mine = read_image(os.getpid())
    assert mine is not None and any(e.executable for e in mine.maps.entries)
    assert mine.file_ids  # executable files, identified
    assert mine.comm == Path("/proc/self/comm").read_text().strip()
    assert read_image(2**22 + 1) is None


def test_a_pids_name_is_its_latest_images_kept_through_a_merge() -> None:
    store = ImageStore()
    assert store.comm(7) is None
    store.put(7, 1, ImageMaps(ProcessMaps([entry(0x1000, 0x2000, "/bin/sh")]), {}, "sh"))
    store.put(7, 2, ImageMaps(ProcessMaps([entry(0x1000, 0x2000, "/bin/sed")]), {}, "sed"))
    store.put(7, 2, image(entry(0x1000, 0x2000, "/bin/sed")))  # read again, name unread
    merged = store.get(7, 2)
    assert store.comm(7) == "sed" and merged is not None and merged.comm == "sed"
