"""A uretprobe on code that C++ exceptions unwind through kills the process.

The kernel replaces the probed function's return address with a trampoline;
an exception thrown through the function makes the C++ unwinder meet that
trampoline, find no unwind info for it, and call std::terminate (a kernel
limit: bpftrace's uretprobes do the same). Owns :func:`throw_warning`, said
once before attaching when the target can throw (it links libstdc++), and
:func:`death_line`, which names what happened when a launched command died
of a signal under a uretprobe instead of "never fired".
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

from bpftop.bpf.probes import ProbeKind, ProbeSpecError, parse_spec

CXX_RUNTIME = b"libstdc++.so"


def _is_uretprobe(probe: str | None) -> bool:
    if not probe:
        return False
    try:
        return parse_spec(probe).kind is ProbeKind.URETPROBE
    except ProbeSpecError:
        return False


def links_cxx(path: str) -> bool:
    """Does the ELF file at ``path`` link the C++ runtime (a DT_NEEDED on
    libstdc++, or libstdc++ itself)? False when it cannot be read."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    if CXX_RUNTIME.decode() in Path(path).name:
        return True
    try:
        with open(path, "rb") as stream:
            for section in ELFFile(stream).iter_sections():
                if isinstance(section, DynamicSection):
                    tags = section.iter_tags("DT_NEEDED")
                    return any(CXX_RUNTIME.decode() in str(getattr(t, "needed", "")) for t in tags)
    except (OSError, ELFError):
        return False
    return False


def _process_links_cxx(pid: int) -> bool:
    try:
        return CXX_RUNTIME in Path(f"/proc/{pid}/maps").read_bytes()
    except OSError:
        return False


def throw_warning(probe: str | None, command: tuple[str, ...], pids: tuple[int, ...]) -> str:
    """One warning line (no prefix) when a uretprobe goes on a target that can
    throw C++ exceptions, else ""."""
    if not _is_uretprobe(probe):
        return ""
    exe = shutil.which(command[0]) if command else None
    cxx = (exe is not None and links_cxx(exe)) or any(_process_links_cxx(p) for p in pids)
    if not cxx:
        return ""
    return (
        f"{probe}: the target uses C++ exceptions; one thrown through the probed function "
        "kills it (a kernel limit of uretprobes), so use uprobe: there if it can throw"
    )


def death_line(probe: str | None, code: int) -> str:
    """What to say (no prefix) when the launched command ended with ``code``
    (128+N: signal N) under a uretprobe, else ""."""
    if not _is_uretprobe(probe) or code <= 128:
        return ""
    try:
        name = signal.Signals(code - 128).name
    except ValueError:
        name = f"signal {code - 128}"
    return (
        f"the command died of {name} (exit {code}) under {probe}: if an exception was "
        "thrown through the probed function, the uretprobe killed it (a kernel limit); "
        "use uprobe: on code that can throw"
    )
