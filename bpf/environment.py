"""Preparing this machine for BCC: kernel headers, tracefs, privileges.

BCC compiles against kernel headers at /lib/modules/$(uname -r)/build. Kernels
without their own headers (and without /sys/kernel/kheaders.tar.xz) can still
compile our program against the distribution's newest header package, because
the program only touches stable ABI (pt_regs, bpf_perf_event_data, helpers,
tracepoint formats). Debian splits those headers into a "-common" and an
arch tree; BCC needs them merged, so we build a symlink farm once and cache it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bpftop.base.errors import BccMissingError, PermissionsError
from bpftop.bpf.compiler_pages import release_compiler_pages

HEADER_CACHE = Path("/var/cache/bpftop/kernel-headers")
TRACEFS_MOUNTS = (("tracefs", "/sys/kernel/tracing"), ("debugfs", "/sys/kernel/debug"))
# CAP_PERFMON = 38, CAP_BPF = 39, CAP_SYS_ADMIN = 21 (linux/capability.h)
_CAP_SYS_ADMIN, _CAP_PERFMON, _CAP_BPF = 21, 38, 39


@dataclass(frozen=True, slots=True)
class HeaderChoice:
    """Which kernel headers BCC will compile against, and whether that is a fallback."""

    path: Path
    fallback: bool

    @property
    def note(self) -> str:
        if not self.fallback:
            return ""
        return f"no headers for kernel {platform.release()}: compiled with {self.path.name} headers"


class kernel_source:
    """Set BCC_KERNEL_SOURCE to fallback headers for the duration of a compile
    (libbcc reads getenv); the running kernel's own headers need nothing."""

    def __init__(self, headers: HeaderChoice) -> None:
        self._path = headers.path if headers.fallback else None
        self._old: str | None = None

    def __enter__(self) -> None:
        self._old = os.environ.get("BCC_KERNEL_SOURCE")
        if self._path is not None:
            os.environ["BCC_KERNEL_SOURCE"] = str(self._path)

    def __exit__(self, *exc: object) -> None:
        if self._old is None:
            os.environ.pop("BCC_KERNEL_SOURCE", None)
        else:
            os.environ["BCC_KERNEL_SOURCE"] = self._old


def check_privileges() -> None:
    """Raise PermissionsError unless we can load BPF and open perf events."""
    caps = _effective_caps()
    if caps & (1 << _CAP_SYS_ADMIN):
        return
    if caps & (1 << _CAP_BPF) and caps & (1 << _CAP_PERFMON):
        return
    raise PermissionsError(
        "bpftop needs root (or CAP_BPF and CAP_PERFMON) to load eBPF programs",
        "run it with sudo",
    )


def _effective_caps() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def choose_headers() -> HeaderChoice:
    """Find headers for the running kernel, building the merged fallback if needed."""
    own = Path("/lib/modules") / platform.release() / "build"
    if (own / "include").is_dir():
        return HeaderChoice(own, fallback=False)
    env = os.environ.get("BCC_KERNEL_SOURCE")
    if env and Path(env, "include").is_dir():
        return HeaderChoice(Path(env), fallback=True)
    return HeaderChoice(_merged_debian_headers(), fallback=True)


def _merged_debian_headers() -> Path:
    common, arch = _newest_debian_header_trees()
    version = common.name.removeprefix("linux-headers-").removesuffix("-common")
    target = HEADER_CACHE / version
    if (target / ".complete").exists():
        return target
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    # Symlink farms, arch tree over common (cp -rs; -f lets arch files win).
    subprocess.run(["cp", "-rs", f"{common}/.", f"{tmp}/"], check=True)
    subprocess.run(["cp", "-rsf", f"{arch}/.", f"{tmp}/"], check=True)
    (tmp / ".complete").touch()
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def _newest_debian_header_trees() -> tuple[Path, Path]:
    src = Path("/usr/src")
    pattern = re.compile(r"linux-headers-(\d+)\.(\d+)\.(\d+)-(\d+)-common$")
    found = []
    for entry in src.glob("linux-headers-*-common") if src.is_dir() else ():
        m = pattern.match(entry.name)
        arch = src / entry.name.replace("-common", "-amd64")
        if m and arch.is_dir():
            found.append((tuple(int(g) for g in m.groups()), entry, arch))
    if not found:
        raise BccMissingError(
            f"no kernel headers for {platform.release()} and no Debian headers to fall back on",
            "apt-get install linux-headers-amd64 (scripts/setup.sh does this)",
        )
    _, common, arch = max(found)
    return common, arch


def ensure_tracefs() -> None:
    """Mount tracefs/debugfs when missing: BCC attaches tracepoints through them."""
    for fstype, where in TRACEFS_MOUNTS:
        if Path(where, "events").is_dir() or Path(where, "tracing", "events").is_dir():
            continue
        if Path(where).is_dir():
            subprocess.run(["mount", "-t", fstype, fstype, where], check=False, capture_output=True)


LIBBCC = "libbcc.so.0"  # the name BCC's bindings load (bcc/libbcc.py)


def import_bcc() -> object:
    """Import BCC's Python bindings, or say how to get them. The first import
    leaves LLVM's pages resident: they are released (compiler_pages).

    libbcc is loaded first with lazy binding: ctypes loads with RTLD_NOW,
    which resolves every function libbcc and LLVM call before it returns
    (0.07 s, holding the GIL: the live view's first tick waited); lazily 0.02 s,
    and the bindings' own load then finds it loaded. A function is bound on its
    first call, in the compile."""
    first = "bcc" not in sys.modules
    if first:
        with contextlib.suppress(OSError):  # the bindings' import says what is missing
            ctypes.CDLL(LIBBCC, mode=os.RTLD_LAZY)
    try:
        import bcc
    except ImportError as exc:
        raise BccMissingError(
            f"cannot import BCC's Python bindings ({exc})",
            "apt-get install python3-bpfcc and run bpftop from a Python that sees "
            "Debian's dist-packages (scripts/setup.sh builds such a venv)",
        ) from None
    if first:
        release_compiler_pages()
    return bcc
