"""One-line hints for unresolved frames: what the user can do about each reason.

Owns :func:`hint` (a frame in, a short sentence out),
:func:`debug_package_for`, which names the Debian package whose debug symbols
would name a file: ``dpkg -S`` finds the package that owns it, then the
``-dbg`` package is preferred when apt knows it (``libc6-dbg``), else the
``-dbgsym`` one from the debian-debug archive is named; and :class:`Hints`,
for callers that must not wait for that lookup. It runs short commands that
take seconds on a busy machine (``dpkg -S`` and ``apt-cache policy`` for
python3.11: ~1.2 CPU-s), so it is computed once per file, never per sample,
for a live view on a helper thread, and the answers are kept on disk
(``debug-packages.json`` in the symbol cache folder, symbols/elf/disk_cache.py)
for as long as dpkg's and apt's databases are unchanged (their mtimes).
Nothing here raises.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from functools import lru_cache

from bpftop.symbols.elf.disk_cache import default_cache_dir
from bpftop.symbols.frame import Frame, Unresolved

COMMAND_TIMEOUT_S = 5.0
SAVED_FILE = "debug-packages.json"
MAX_SAVED = 1000  # answers kept on disk; the oldest go first
# What the answers depend on: which package owns a file, which packages apt knows.
DATABASES = ("/var/lib/dpkg/status", "/var/cache/apt/pkgcache.bin")
_SAVED_LOCK = threading.RLock()  # lookups run on several threads: one reads or saves at a time

JIT_HINT = (
    "JIT code without /tmp/perf-PID.map: start the runtime with its perf map on "
    "(node --perf-basic-prof, python3 -X perf, java -XX:+UnlockDiagnosticVMOptions "
    "-XX:+DumpPerfMapAtExit)"
)
_STATIC_HINTS: dict[Unresolved, str] = {
    Unresolved.UNMAPPED: "address outside every mapping of the process "
    "(code unmapped since, or a stack walked wrongly)",
    Unresolved.FILE_UNREADABLE: "the mapped file could not be read or is not a valid ELF file",
    Unresolved.PROCESS_GONE: "the process exited before bpftop first saw it; "
    "its maps were never read",
    Unresolved.ANONYMOUS: "anonymous executable memory that the process's perf map "
    "does not describe",
    Unresolved.JIT_NO_PERF_MAP: JIT_HINT,
    Unresolved.NOT_CODE: "a return address in memory that is not executable ([heap], "
    "[stack], data): a stack walked wrongly past a frame without frame pointers",
    Unresolved.KERNEL_HIDDEN: "kernel symbols are hidden: run as root, or set "
    "sysctl kernel.kptr_restrict=0",
    Unresolved.STACK_UNREADABLE: "the stack could not be read for this sample",
    Unresolved.CODE_FREED: "the Python function's code object was freed (its address "
    "reused) before bpftop read its name: short-lived generated code",
    Unresolved.NOT_COVERED: "the file's full symbol table has no function at this address "
    "(a PLT stub, padding, hand-written code, or a wrong return address); "
    "a debug package would not help",
    Unresolved.STACK_TRUNCATED: "the walk stopped before main or a thread start: a file "
    "without an unwind table (yet) and without frame pointers, or a rule the walker "
    "cannot follow",
    Unresolved.STACK_UNDESCRIBED: "the walk reached a library mapped after bpftop gave the "
    "walker the process's mappings (its first milliseconds, a dlopen): the frames past it "
    "are left out until the mappings are read again",
    Unresolved.STACK_TOO_DEEP: "deeper than the walk limit (kernel.perf_event_max_stack): "
    "the outermost frames are cut",
}


def _run(args: list[str]) -> str | None:
    if shutil.which(args[0]) is None:
        return None
    try:
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _path_variants(path: str) -> list[str]:
    """``path``, its real path, and its /usr-merged twin (dpkg knows only one)."""
    variants = [path, os.path.realpath(path)]
    for candidate in list(variants):
        if candidate.startswith("/usr/"):
            variants.append(candidate[4:])
        else:
            variants.append("/usr" + candidate)
    return list(dict.fromkeys(variants))


def owning_package(path: str) -> str | None:
    """The Debian package (without ``:arch``) that installed ``path``, or None."""
    for variant in _path_variants(path):
        out = _run(["dpkg", "-S", variant])
        if out:
            first = out.splitlines()[0]
            package = first.split(":", 1)[0].split(",")[0].strip()
            if package and " " not in package:
                return package
    return None


def _apt_knows(package: str) -> bool:
    out = _run(["apt-cache", "policy", package])
    return bool(out and "Candidate:" in out and "Candidate: (none)" not in out)


@lru_cache(maxsize=1024)
def debug_package_for(path: str) -> str | None:
    """The debug package that would name ``path``'s functions, or None if unknown."""
    if not path.startswith("/"):
        return None
    stamp = _databases_stamp()
    saved = _saved(stamp)
    if path in saved:
        return saved[path]
    package = _look_up(path)
    _save(stamp, path, package)
    return package


def _look_up(path: str) -> str | None:
    package = owning_package(path)
    if package is None:
        return None
    if _apt_knows(f"{package}-dbg"):
        return f"{package}-dbg"
    return f"{package}-dbgsym"


def _databases_stamp() -> list[int]:
    stamp = []
    for database in DATABASES:
        try:
            stamp.append(os.stat(database).st_mtime_ns)
        except OSError:
            stamp.append(0)
    return stamp


def _saved_path() -> str | None:
    folder = default_cache_dir()
    return os.path.join(folder, SAVED_FILE) if folder else None


def _saved(stamp: list[int]) -> dict[str, str | None]:
    """The answers saved while the databases were as ``stamp`` says ({}: none)."""
    where = _saved_path()
    if where is None:
        return {}
    with _SAVED_LOCK:
        try:
            with open(where) as f:
                raw = json.load(f)
        except (OSError, ValueError):
            return {}
    if not isinstance(raw, dict) or raw.get("stamp") != stamp:
        return {}
    packages = raw.get("packages")
    if not isinstance(packages, dict):
        return {}
    return {k: v for k, v in packages.items() if isinstance(v, str | None)}


def _save(stamp: list[int], path: str, package: str | None) -> None:
    where = _saved_path()
    if where is None:
        return
    with _SAVED_LOCK, contextlib.suppress(OSError):  # read, add and write as one
        answers = {**_saved(stamp), path: package}
        answers = dict(list(answers.items())[-MAX_SAVED:])
        os.makedirs(os.path.dirname(where), exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=os.path.dirname(where), prefix=".debug-packages.")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"stamp": stamp, "packages": answers}, f)
            os.replace(partial, where)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)  # a failed write's; gone once replaced


def hint(frame: Frame) -> str:
    """What to do about an unresolved frame, in one line ("" when resolved)."""
    reason = frame.reason
    if reason is None:
        return ""
    if reason is Unresolved.NO_SYMBOLS:
        return _no_symbols_hint(frame.module)
    return _STATIC_HINTS.get(reason, reason.value)


class Hints:
    """:func:`hint` without waiting: a file's debug-package lookup runs on a
    daemon thread (never holding up exit), and until it is done the hint
    says it is under way. Used from one thread."""

    def __init__(self) -> None:
        self._lookups: dict[str, threading.Thread] = {}

    def hint(self, frame: Frame) -> str:
        if frame.reason is not Unresolved.NO_SYMBOLS:
            return hint(frame)
        lookup = self._lookups.get(frame.module)
        if lookup is None:
            lookup = threading.Thread(
                target=debug_package_for, args=(frame.module,), name="bpftop-hint", daemon=True
            )
            lookup.start()
            self._lookups[frame.module] = lookup
        if lookup.is_alive():
            name = _file_name(frame.module)
            return f"{name} {NO_DEBUG_FILE} (looking up which package has them…)"
        return hint(frame)  # the lookup's answer is cached now


NO_DEBUG_FILE = "has no symbols and no debug file was found"


def _file_name(module: str) -> str:
    return os.path.basename(module) if module.startswith("/") else module or "the file"


def _no_symbols_hint(module: str) -> str:
    name = _file_name(module)
    package = debug_package_for(module)
    if package is None:
        return f"{name} {NO_DEBUG_FILE}; rebuild it without stripping"
    where = "" if package.endswith("-dbg") else " (from the debian-debug archive)"
    return f"{name} {NO_DEBUG_FILE}: install {package}{where}"
