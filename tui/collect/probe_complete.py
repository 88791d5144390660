"""Checking and completing probe specs as they are typed (the probe dialog's brain).

``check`` runs the same parse and resolution the switch will (so what it
accepts, the collector attaches), and ``complete`` offers the next piece:
probe kinds, perf event names, tracepoint names from the kernel's list,
binaries and libraries the targets map, and function symbols in them. The
data sources are injectable, so tests run without a kernel. No Textual here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bpftop.base.errors import BpftopError
from bpftop.bpf.probes import HARDWARE_EVENTS, SOFTWARE_EVENTS, ProbeKind, parse_spec
from bpftop.bpf.resolve import (
    function_symbols,
    mapped_files,
    matches_name,
    public_names,
    resolve,
    seen_by,
    tracepoint_names,
)

MAX_COMPLETIONS = 30
KIND_STARTS = (
    "profile:hz:",
    "software:",
    "hardware:",
    "uprobe:",
    "uretprobe:",
    "tracepoint:",
    "offcpu",
    "kprobe:",
    "kretprobe:",
    "usdt:",
)


def _check_with_kernel(text: str, pids: Sequence[int]) -> str:
    try:
        resolve(parse_spec(text), pids)
    except BpftopError as err:
        return str(err)
    return ""


def _target_symbols(path: str, pid: int) -> Sequence[tuple[str, int]]:
    return function_symbols(seen_by(path, pid))


@dataclass
class ProbeCompleter:
    """Completion and validation against the targets' processes."""

    pids: Sequence[int] = ()
    tracepoints: Callable[[], Sequence[str]] = tracepoint_names
    files: Callable[[int], Sequence[str]] = mapped_files
    symbols: Callable[[str, int], Sequence[tuple[str, int]]] = _target_symbols
    checker: Callable[[str, Sequence[int]], str] = _check_with_kernel
    _cache: dict[str, str] = field(default_factory=dict)

    def check(self, text: str) -> str:
        """'' when the spec can be attached now, else the one-line reason."""
        text = text.strip()
        if text not in self._cache:
            self._cache[text] = self.checker(text, self.pids)
        return self._cache[text]

    def complete(self, text: str) -> tuple[str, ...]:
        """Whole specs that extend ``text`` (best first, at most MAX_COMPLETIONS)."""
        head, sep, rest = text.partition(":")
        if not sep:
            return tuple(k for k in KIND_STARTS if k.startswith(text))
        found: list[str] = []
        if head in (ProbeKind.SOFTWARE, ProbeKind.HARDWARE) and ":" not in rest:
            events = SOFTWARE_EVENTS if head == ProbeKind.SOFTWARE else HARDWARE_EVENTS
            found = [f"{head}:{e}" for e in events if e.startswith(rest)]
        elif head == ProbeKind.TRACEPOINT:
            found = [f"tracepoint:{t}" for t in self.tracepoints() if t.startswith(rest)]
        elif head in (ProbeKind.UPROBE, ProbeKind.URETPROBE):
            found = self._user(head, rest)
        return tuple(found[:MAX_COMPLETIONS])

    def _user(self, head: str, rest: str) -> list[str]:
        target, sep, symbol = rest.partition(":")
        files = self._files()
        if not sep:
            names = {os.path.basename(p) for p, _ in files} | {p for p, _ in files}
            return [f"{head}:{n}:" for n in sorted(names) if n.startswith(target)]
        # the file the switch would attach to: one the target maps, read as it sees it
        found = [(p, pid) for p, pid in files if p == target or matches_name(p, target)]
        path, pid = found[0] if found else (target, self.pids[0] if self.pids else -1)
        try:
            symbols = self.symbols(path, pid)
        except BpftopError:  # unreadable: nothing to complete (checking says why)
            return []
        return [f"{head}:{target}:{n}" for n in public_names(symbols, symbol)]

    def _files(self) -> list[tuple[str, int]]:
        """(path, pid) of each file the targets map, the first process mapping it."""
        found: dict[str, int] = {}
        for pid in self.pids:
            for path in self.files(pid):
                found.setdefault(path, pid)
        return list(found.items())
