"""Where a launched command's loader has mapped its libraries.

Owns :class:`LoaderWatch`: it attaches bpftop.bpf.c's ``loader_ready`` to
``_dl_debug_state`` in the dynamic loader a held process runs (the program's
PT_INTERP, read through /proc/PID/root: a chroot's loader is its own), once
per loader file. The loader calls that hook, made for debuggers, before it
maps the program's libraries and again once they are mapped; the program
stops a command bpftop holds at the second call after its exec (it arms
itself at the exec), so the libraries' maps are read, and their unwind tables
given to the walker, before any of their code runs. The uprobe is on the
file, so every process that starts with that loader passes it (twice, a few
microseconds each); only a held command stops. Nothing here raises: a
program without a loader (static) or a loader without the hook is simply
not stopped there.
"""

from __future__ import annotations

import os
from typing import Any

from elftools.elf.elffile import ELFFile
from elftools.elf.segments import InterpSegment

from bpftop.bpf.libbcc import attach_uprobe
from bpftop.bpf.probes import ProbeSpecError
from bpftop.bpf.resolve import function_symbols, seen_by

HOOK = "_dl_debug_state"
HANDLER = b"loader_ready"


def interpreter_of(pid: int) -> str | None:
    """The loader process ``pid``'s program names (PT_INTERP, as the process
    sees the path), or None (static, gone, unreadable)."""
    try:
        with open(f"/proc/{pid}/exe", "rb") as exe:
            for segment in ELFFile(exe).iter_segments():
                if isinstance(segment, InterpSegment):
                    return str(segment.get_interp_name())
    except Exception:  # gone, or not an ELF file pyelftools can read
        return None
    return None


class LoaderWatch:
    """The loaders ``loader_ready`` is attached to, by file identity."""

    def __init__(self, bpf: Any) -> None:
        self._bpf = bpf
        self._files: dict[tuple[int, int], bool] = {}

    def watch(self, pid: int) -> bool:
        """Attach to the loader ``pid`` runs, if not yet; True when attached."""
        interpreter = interpreter_of(pid)
        if interpreter is None:
            return False
        path = seen_by(interpreter, pid)
        try:
            info = os.stat(path)
        except OSError:
            return False
        key = (info.st_dev, info.st_ino)
        if key not in self._files:
            self._files[key] = self._attach(path)
        return self._files[key]

    def _attach(self, path: str) -> bool:
        try:
            address = dict(function_symbols(path)).get(HOOK)
            if not address:
                return False
            attach_uprobe(self._bpf, path.encode(), address, HANDLER, -1)
        except (OSError, ProbeSpecError):
            return False
        return True
