"""From a :class:`ProbeSpec` to what must be attached, or a clear error why not.

Resolution happens before anything is detached, so a spec that cannot be used
leaves the running probe alone. A uprobe TARGET that is not a path is looked
up in the target processes' own /proc/PID/maps (``c`` -> the libc.so.6 the
process really maps; a chroot's files named as the process names them,
:func:`named_by`), then through ldconfig and PATH; a target process's
files are read as it sees them (:func:`seen_by`: /proc/PID/root). SYMBOL globs are
matched against the binary's function symbols (BCC enumerates them), capped
at :data:`MAX_SITES`; a symbol that matches nothing gets near matches in the
error. A USDT probe is found in the file's SDT notes (:mod:`bpftop.bpf.usdt`),
with its semaphore's file offset when it has one. Kernel features the spec
needs (kprobes, a hardware PMU, tracefs events) are checked here and named in
the error when missing;
:func:`check_up_front` runs the same checks before the compile.
"""

from __future__ import annotations

import ctypes
import difflib
import fnmatch
import functools
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bpftop.bpf.environment import import_bcc
from bpftop.bpf.probes import (
    PERF_TYPE_HARDWARE,
    SOFTWARE_CPU_CLOCK,
    Attach,
    ProbeSpec,
    ProbeSpecError,
)
from bpftop.bpf.usdt import UsdtReadError, file_key, usdt_notes

MAX_SITES = 200  # functions one spec may attach to (each uprobe costs an attach)
TRACEFS_EVENTS = (Path("/sys/kernel/tracing/events"), Path("/sys/kernel/debug/tracing/events"))


@dataclass(frozen=True, slots=True)
class UserSite:
    """One user-space address to probe: ``address`` as BCC's ``addr`` wants it."""

    path: str
    address: int
    symbol: str
    pid: int  # -1: every process mapping the file
    ref_ctr_offset: int = 0  # a USDT semaphore's file offset: the kernel raises it (0: none)


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything needed to attach one spec (only the fields of its kind are set)."""

    spec: ProbeSpec
    sites: tuple[UserSite, ...] = ()
    tracepoint: str = ""  # "category:name"
    kernel_function: str = ""
    perf_type: int = -1
    perf_config: int = -1


class UnsupportedProbeError(ProbeSpecError):
    """The spec is well formed but this kernel or machine cannot run it."""


def resolve(spec: ProbeSpec, pids: Sequence[int], system_wide: bool = False) -> Plan:
    """What to attach for ``spec`` on these targets; raises ProbeSpecError."""
    rule = spec.rule
    if rule.attach is Attach.PERF_EVENT:
        names = rule.event_names
        config = names[spec.name] if names is not None else SOFTWARE_CPU_CLOCK
        if rule.perf_type == PERF_TYPE_HARDWARE:
            _check_hardware(spec, config)
        return Plan(spec, perf_type=rule.perf_type, perf_config=config)
    if rule.attach is Attach.TRACEPOINT:
        name = rule.tracepoint or f"{spec.target}:{spec.name}"
        _check_tracepoint(name)
        return Plan(spec, tracepoint=name)
    if rule.attach is Attach.KERNEL_FUNCTION:
        _check_kprobes()
        return Plan(spec, kernel_function=spec.name)
    targets = _paths(spec.target, pids, system_wide)
    if rule.attach is Attach.USDT:
        return Plan(spec, sites=_usdt_sites(spec, targets))
    return Plan(spec, sites=_symbol_sites(spec, targets))


USER_ATTACH = (Attach.USER_FUNCTION, Attach.USDT)


def check_up_front(spec: ProbeSpec, pids: Sequence[int] | None, system_wide: bool) -> None:
    """Raise what :func:`resolve` would for ``spec``, before anything is compiled.

    ``pids`` None: the targets do not exist yet (``-- COMMAND``), so a user
    TARGET given by name (``uprobe:c:malloc``: found in the targets' own maps)
    or by a path this root does not have (the command may chroot: a path as
    it will see it) is left to ``resolve`` at attach time; other paths,
    tracepoints, kprobes and hardware events are checked all the same."""
    user = spec.rule.attach in USER_ATTACH
    if pids is None and user and ("/" not in spec.target or not os.path.exists(spec.target)):
        return
    resolve(spec, pids or (), system_wide)


def kprobes_available() -> bool:
    return Path("/sys/bus/event_source/devices/kprobe").exists() or any(
        (events.parent / "kprobe_events").exists() for events in TRACEFS_EVENTS
    )


def _check_kprobes() -> None:
    if not kprobes_available():
        raise UnsupportedProbeError(
            "kprobes are not available: this kernel was built without CONFIG_KPROBES",
            "use tracepoint: probes (or uprobe: in user space) on this kernel",
        )


def tracepoint_names() -> tuple[str, ...]:
    """Every "category:name" the kernel offers, sorted (for checks and completion)."""
    for events in TRACEFS_EVENTS:
        if events.is_dir():
            return _tracepoints_in(str(events))
    return ()


@functools.lru_cache(maxsize=2)
def _tracepoints_in(events: str) -> tuple[str, ...]:
    names = []
    for category in os.scandir(events):
        if category.is_dir():
            names += [f"{category.name}:{e.name}" for e in os.scandir(category.path) if e.is_dir()]
    return tuple(sorted(names))


def _check_tracepoint(name: str) -> None:
    known = tracepoint_names()
    if not known:
        raise UnsupportedProbeError(
            "no tracefs: tracepoints cannot be listed or attached",
            "mount -t tracefs tracefs /sys/kernel/tracing",
        )
    if name not in known:
        near = difflib.get_close_matches(name, known, n=4, cutoff=0.6)
        raise ProbeSpecError(
            f"no tracepoint {name}", _near_hint(near, "see /sys/kernel/tracing/events")
        )


def _near_hint(near: Sequence[str], otherwise: str) -> str:
    return f"did you mean: {', '.join(near)}" if near else otherwise


def _check_hardware(spec: ProbeSpec, config: int) -> None:
    """Open (disabled) and close the hardware event on ourselves: does the PMU exist?"""
    attr = (ctypes.c_uint64 * 16)()
    attr[0] = PERF_TYPE_HARDWARE | (128 << 32)  # type, size
    attr[1] = config
    attr[6] = 1  # flags: disabled
    libc = ctypes.CDLL(None, use_errno=True)
    fd = int(libc.syscall(298, ctypes.byref(attr), 0, -1, -1, 0))  # perf_event_open (x86_64)
    if fd >= 0:
        os.close(fd)
        return
    err = ctypes.get_errno()
    raise UnsupportedProbeError(
        f"hardware event {spec.name} is not supported on this machine "
        f"({os.strerror(err)}: no hardware PMU, as on most VMs)",
        "use software: events or profile:hz:N instead",
    )


def mapped_files(pid: int) -> tuple[str, ...]:
    """Paths of the files mapped executable in a process, in map order, once each."""
    try:
        text = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ()
    seen: dict[str, None] = {}
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and "x" in fields[1] and fields[5].startswith("/"):
            seen[fields[5].removesuffix(" (deleted)")] = None
    return tuple(seen)


def matches_name(path: str, name: str) -> bool:
    """Whether a TARGET name (``c``, ``libssl``, ``python3.11``) names the file ``path``."""
    base = os.path.basename(path)
    return (
        base == name
        or base.startswith((f"lib{name}.so", f"{name}.so", f"lib{name}-"))
        or (name.startswith("lib") and base.startswith(f"{name}.so"))
    )


def named_by(path: str, pid: int) -> str:
    """``path`` as /proc/PID/maps shows it to bpftop, as process ``pid`` names
    it: a file of a chroot shows with the chroot's folder (``/proc/PID/root``'s
    target) in front, which :func:`seen_by` (and BCC, for a pid's uprobe) would
    add a second time; other paths are kept."""
    try:
        root = os.readlink(f"/proc/{pid}/root").rstrip("/")
    except OSError:
        return path
    return path[len(root) :] if root and path.startswith(root + "/") else path


def _as_named(path: str, pid: int) -> str:
    """A path given for process ``pid``: as it names it (:func:`named_by`) when
    its root has no such file but the path is one of the root's files as
    /proc/PID/maps shows them to bpftop (copied from there)."""
    if pid <= 0 or os.path.exists(seen_by(path, pid)):
        return path
    return named_by(path, pid)


def seen_by(path: str, pid: int) -> str:
    """``path`` as process ``pid`` sees it (its root and mounts: another container's
    file, or a library bind-mounted over the path), through /proc/PID/root. Symbols
    and USDT notes are read from there: BCC attaches a pid's uprobe to that file too."""
    if pid > 0 and path.startswith("/") and not path.startswith("/proc/"):
        return f"/proc/{pid}/root{path}"
    return path


def site_files(sites: Sequence[UserSite]) -> frozenset[tuple[object, ...]]:
    """The files (device, inode), addresses and pids ``sites`` name now: one
    path can name another file once a process has changed root (chroot's
    exec), where its sites' paths are the same."""
    found: set[tuple[object, ...]] = set()
    for site in sites:
        try:
            stat = os.stat(seen_by(site.path, site.pid))
            found.add((stat.st_dev, stat.st_ino, site.address, site.pid))
        except OSError:
            found.add((site.path, site.address, site.pid))
    return frozenset(found)


def _paths(target: str, pids: Sequence[int], system_wide: bool) -> tuple[tuple[str, int], ...]:
    """(path, pid) pairs for a TARGET; pid -1 means every process (with -a)."""
    if "/" in target:
        named = [(target if system_wide else _as_named(target, pid), pid) for pid in pids or [-1]]
        if not any(os.path.exists(seen_by(path, pid)) for path, pid in named):
            raise ProbeSpecError(f"no file {target}", "give an existing path or a library name")
        return tuple((path, -1 if system_wide else pid) for path, pid in named)
    found = [(p, pid) for pid in pids for p in mapped_files(pid) if matches_name(p, target)]
    if found and not system_wide:
        return tuple(dict.fromkeys((named_by(p, pid), pid) for p, pid in found))
    if found:  # every process: the file by the path bpftop sees
        return tuple(dict.fromkeys((p, -1) for p, _ in found))
    fallback = _library_path(target)  # not mapped (yet): ldconfig, then PATH
    if fallback:
        return tuple((fallback, -1 if system_wide else pid) for pid in pids or [-1])
    mapped = sorted({os.path.basename(p) for pid in pids for p in mapped_files(pid)})
    raise ProbeSpecError(
        f"no binary or library '{target}' is mapped by the target",
        f"give a path, or one of: {', '.join(mapped[:8])}" if mapped else "give a path",
    )


def _library_path(name: str) -> str:
    """A TARGET name no target maps (yet: a launched command has not exec'd):
    a program on PATH of exactly that name (python3.11, not the
    libpython3.11.so ldconfig also knows), else ldconfig's lib<name>.so
    (``c``, ``libstdc++``), else any program on PATH."""
    program = shutil.which(name)
    if program and not name.startswith("lib") and _is_elf(program):  # not a pyenv shim
        return program
    bcc = import_bcc()
    for library in (name, name.removeprefix("lib")) if name.startswith("lib") else (name,):
        found = bcc.BPF.find_library(library.encode())  # type: ignore[attr-defined]
        if found:
            return str(found.decode())
    return program or ""


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(4) == b"\x7fELF"
    except OSError:
        return False


def function_symbols(path: str) -> tuple[tuple[str, int], ...]:
    """(name, address) of every function symbol in an ELF file, as BCC sees them."""
    return _function_symbols(path, file_key(path))


@functools.lru_cache(maxsize=32)
def _function_symbols(path: str, _key: tuple[int, ...]) -> tuple[tuple[str, int], ...]:
    bcc = import_bcc()
    try:
        found = bcc.BPF.get_user_functions_and_addresses(path.encode(), b".*")  # type: ignore[attr-defined]
    except Exception as err:  # BCC says it cannot read the file with a plain Exception
        if type(err) is not Exception:
            raise
        raise ProbeSpecError(f"cannot read the symbols of {path}", _unreadable(path)) from None
    return tuple((name.decode(errors="replace"), int(addr)) for name, addr in found)


def public_names(symbols: Sequence[tuple[str, int]], prefix: str = "") -> list[str]:
    """The names starting with ``prefix``, sorted, each once, without internal
    aliases: of the names at one address, only those with the fewest leading
    underscores (``malloc``, not ``__libc_malloc`` or ``__GI___libc_malloc``),
    unless ``prefix`` itself starts with an underscore."""
    matching = [(n, a) for n, a in symbols if n.startswith(prefix)]
    if prefix.startswith("_"):
        return sorted({n for n, _ in matching})
    fewest: dict[int, int] = {}
    for name, address in symbols:
        under = len(name) - len(name.lstrip("_"))
        fewest[address] = min(under, fewest.get(address, under))
    return sorted({n for n, a in matching if len(n) - len(n.lstrip("_")) == fewest[a]})


ELF_PARSED = "an ELF file BCC could not parse"


def _unreadable(path: str) -> str:
    """Why BCC could not read ``path``'s symbols, as far as we can tell."""
    try:
        with open(path, "rb") as elf:
            magic = elf.read(4)
    except OSError as err:
        return err.strerror or repr(err)
    return ELF_PARSED if magic == b"\x7fELF" else "not an ELF file"


def _symbol_sites(spec: ProbeSpec, targets: Sequence[tuple[str, int]]) -> tuple[UserSite, ...]:
    sites: dict[tuple[str, int, int], UserSite] = {}
    for path, pid in targets:
        symbols = function_symbols(seen_by(path, pid))
        for name, address in symbols:
            if fnmatch.fnmatchcase(name, spec.name) if spec.is_glob else name == spec.name:
                sites.setdefault((path, address, pid), UserSite(path, address, name, pid))
        if not any(s.path == path for s in sites.values()):
            raise _no_symbol(spec, path, symbols)
    functions = {(s.path, s.address) for s in sites.values()}
    if len(functions) > MAX_SITES:
        raise ProbeSpecError(
            f"'{spec.name}' matches {len(functions)} functions, more than {MAX_SITES}",
            "narrow the glob",
        )
    return tuple(sites.values())


def _no_symbol(spec: ProbeSpec, path: str, symbols: Sequence[tuple[str, int]]) -> ProbeSpecError:
    if not symbols:
        why = _unreadable(path)
        hint = "is it stripped? give another binary" if why == ELF_PARSED else why
        return ProbeSpecError(f"{path} has no function symbols", hint)
    pattern = spec.name.strip("*?[]")
    offered = public_names(symbols, "_" if spec.name.startswith("_") else "")
    near = difflib.get_close_matches(spec.name, offered, n=5, cutoff=0.7)
    near += [n for n in offered if pattern and pattern in n and n not in near][: 5 - len(near)]
    return ProbeSpecError(
        f"no function '{spec.name}' in {path}", _near_hint(near, "check the name with nm -D")
    )


def _usdt_sites(spec: ProbeSpec, targets: Sequence[tuple[str, int]]) -> tuple[UserSite, ...]:
    """One site per note of ``spec``'s probe in each target file; a probe with a
    semaphore carries its file offset, so attaching raises it (see bpf/libbcc.py)."""
    sites: dict[tuple[str, int, int], UserSite] = {}
    unreadable: list[str] = []
    found: list[str] = []
    for path, pid in targets:
        try:
            notes = usdt_notes(seen_by(path, pid))
        except UsdtReadError as err:
            unreadable.append(f"{path}: {err}")
            continue
        found += [n.label for n in notes]
        for note in notes:
            if (note.provider, note.name) != (spec.provider, spec.name):
                continue
            if note.semaphore and not note.semaphore_offset:
                raise UnsupportedProbeError(
                    f"USDT probe {note.label} in {path} has a semaphore outside the "
                    "file's loaded data: it cannot be enabled",
                    "probe another binary, or the function the probe is in (uprobe:)",
                )
            site = UserSite(path, note.address, spec.name, pid, note.semaphore_offset)
            sites.setdefault((path, note.address, pid), site)
    if not sites:
        raise _no_usdt(spec, targets, unreadable, found)
    return tuple(sites.values())


def _no_usdt(
    spec: ProbeSpec,
    targets: Sequence[tuple[str, int]],
    unreadable: Sequence[str],
    found: Sequence[str],
) -> ProbeSpecError:
    searched = ", ".join(dict.fromkeys(p for p, _ in targets))
    if unreadable:  # not the same as a file without the probe
        searched += f" (could not read {'; '.join(unreadable)})"
    labels = sorted(set(found))
    wanted = f"{spec.provider}:{spec.name}"
    near = difflib.get_close_matches(wanted, labels, n=5, cutoff=0.6)
    if near:
        hint = f"did you mean: {', '.join(near)}"
    elif labels:
        hint = f"it has: {', '.join(labels[:8])}"
    elif unreadable:
        hint = "give the path of the ELF binary or library that has the probe"
    else:
        hint = "it has no USDT probes (readelf -n BINARY lists them)"
    return ProbeSpecError(f"no USDT probe {wanted} in {searched}", hint)
