"""Probe specs: bpftrace-style text to a :class:`ProbeSpec` value, and back.

Grammar (one spec per probe; ``--probe`` and the TUI's probe dialog)::

    profile:hz:N                      CPU sampling (default profile:hz:99)
    software:EVENT[:PERIOD]           page-faults, context-switches, cpu-migrations, ...
    hardware:EVENT[:PERIOD]           cycles, instructions, cache-misses, ...
    uprobe:TARGET:SYMBOL              TARGET: a path, or a name found in the
    uretprobe:TARGET:SYMBOL           target's maps (c, libssl, python3.11);
                                      SYMBOL may be a glob (PyObject_Gen*)
    tracepoint:CATEGORY:NAME
    kprobe:FUNC / kretprobe:FUNC
    offcpu[:MIN_US]                   blocked time from sched:sched_switch
    usdt:TARGET:PROVIDER:NAME

Parsing needs nothing but the text; whether the symbol, tracepoint or kernel
feature exists is decided by :mod:`bpftop.bpf.resolve`. Errors are
:class:`ProbeSpecError` (a ``UsageError``) with a hint.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bpftop.base.errors import UsageError


class ProbeKind(StrEnum):
    PROFILE = "profile"
    SOFTWARE = "software"
    HARDWARE = "hardware"
    UPROBE = "uprobe"
    URETPROBE = "uretprobe"
    TRACEPOINT = "tracepoint"
    KPROBE = "kprobe"
    KRETPROBE = "kretprobe"
    OFFCPU = "offcpu"
    USDT = "usdt"


ALIASES = {
    "p": ProbeKind.PROFILE,
    "s": ProbeKind.SOFTWARE,
    "h": ProbeKind.HARDWARE,
    "u": ProbeKind.UPROBE,
    "ur": ProbeKind.URETPROBE,
    "t": ProbeKind.TRACEPOINT,
    "k": ProbeKind.KPROBE,
    "kr": ProbeKind.KRETPROBE,
    "U": ProbeKind.USDT,
}

# perf_event_open configs (linux/perf_event.h) and default sample periods.
SOFTWARE_EVENTS = {
    "cpu-clock": 0,
    "task-clock": 1,
    "page-faults": 2,
    "faults": 2,
    "context-switches": 3,
    "cs": 3,
    "cpu-migrations": 4,
    "migrations": 4,
    "minor-faults": 5,
    "major-faults": 6,
}
HARDWARE_EVENTS = {
    "cycles": 0,
    "cpu-cycles": 0,
    "instructions": 1,
    "cache-references": 2,
    "cache-misses": 3,
    "branch-instructions": 4,
    "branches": 4,
    "branch-misses": 5,
    "bus-cycles": 6,
    "ref-cycles": 9,
}
CLOCK_PERIOD_NS = 1_000_000  # cpu-clock / task-clock: one sample per ms
HARDWARE_PERIOD = 1_000_000
MAX_HZ = 100_000
USAGE = "e.g. profile:hz:99, uprobe:c:malloc, tracepoint:sched:sched_switch, offcpu"


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    """One parsed probe. Unused fields stay empty/zero for a kind."""

    kind: ProbeKind
    target: str = ""  # uprobe/uretprobe/usdt: path or library name; tracepoint: category
    name: str = ""  # symbol, function, tracepoint name, event, or USDT probe name
    provider: str = ""  # usdt only
    number: int = 0  # profile: Hz; software/hardware: period; offcpu: min µs

    @property
    def weighted(self) -> bool:
        """True when each stack carries time (ns), not just a count."""
        return self.kind in (ProbeKind.URETPROBE, ProbeKind.OFFCPU)

    @property
    def is_glob(self) -> bool:
        return any(c in self.name for c in "*?[")

    def __str__(self) -> str:
        k = self.kind
        if k is ProbeKind.PROFILE:
            return f"profile:hz:{self.number}"
        if k in (ProbeKind.SOFTWARE, ProbeKind.HARDWARE):
            return f"{k}:{self.name}:{self.number}"
        if k is ProbeKind.OFFCPU:
            return f"offcpu:{self.number}" if self.number else "offcpu"
        if k in (ProbeKind.KPROBE, ProbeKind.KRETPROBE):
            return f"{k}:{self.name}"
        if k is ProbeKind.USDT:
            return f"usdt:{self.target}:{self.provider}:{self.name}"
        return f"{k}:{self.target}:{self.name}"


def parse_spec(text: str) -> ProbeSpec:
    """Parse one spec; raises ProbeSpecError saying what is wrong."""
    text = text.strip()
    if not text:
        raise ProbeSpecError("empty probe spec", USAGE)
    head, _, rest = text.partition(":")
    kind = ALIASES.get(head) or _kind(head.lower())
    parts = rest.split(":") if rest else []
    parser = _PARSERS[kind]
    return parser(kind, parts, text)


class ProbeSpecError(UsageError):
    """A probe spec that cannot be used (bad syntax, no such symbol, unsupported here)."""


def _kind(word: str) -> ProbeKind:
    try:
        return ProbeKind(word)
    except ValueError:
        kinds = ", ".join(k.value for k in ProbeKind)
        raise ProbeSpecError(f"unknown probe kind '{word}'", f"one of: {kinds}") from None


def _number(word: str, what: str, text: str, low: int = 1, high: int = 2**62) -> int:
    try:
        value = int(word)
    except ValueError:
        raise ProbeSpecError(f"'{word}' in '{text}' is not a number", f"give {what}") from None
    if not low <= value <= high:
        raise ProbeSpecError(f"{what} {value} in '{text}' is out of range", f"use {low}..{high}")
    return value


def _profile(kind: ProbeKind, parts: list[str], text: str) -> ProbeSpec:
    if len(parts) == 1 and parts[0]:  # profile:99 (bpftrace spells it profile:hz:99)
        parts = ["hz", parts[0]]
    if not parts:
        parts = ["hz", "99"]
    if len(parts) != 2 or parts[0] != "hz":
        raise ProbeSpecError(f"bad profile spec '{text}'", "profile:hz:N, e.g. profile:hz:99")
    return ProbeSpec(kind, number=_number(parts[1], "a frequency in Hz", text, 1, MAX_HZ))


def _perf_event(kind: ProbeKind, parts: list[str], text: str) -> ProbeSpec:
    events = SOFTWARE_EVENTS if kind is ProbeKind.SOFTWARE else HARDWARE_EVENTS
    if not 1 <= len(parts) <= 2 or parts[0] not in events:
        names = ", ".join(events)
        raise ProbeSpecError(f"bad {kind} spec '{text}'", f"{kind}:EVENT[:PERIOD], EVENT: {names}")
    period = _default_period(kind, parts[0])
    if len(parts) == 2:
        period = _number(parts[1], "a sample period", text)
    return ProbeSpec(kind, name=parts[0], number=period)


def _default_period(kind: ProbeKind, event: str) -> int:
    if kind is ProbeKind.HARDWARE:
        return HARDWARE_PERIOD
    return CLOCK_PERIOD_NS if event.endswith("clock") else 1


def _user(kind: ProbeKind, parts: list[str], text: str) -> ProbeSpec:
    if len(parts) < 2 or not parts[0] or not parts[-1]:
        raise ProbeSpecError(
            f"bad {kind} spec '{text}'", f"{kind}:TARGET:SYMBOL, e.g. {kind}:c:malloc"
        )
    # C++ names hold '::': everything after the target is the symbol.
    return ProbeSpec(kind, target=parts[0], name=":".join(parts[1:]))


def _tracepoint(kind: ProbeKind, parts: list[str], text: str) -> ProbeSpec:
    if len(parts) != 2 or not all(parts):
        raise ProbeSpecError(
            f"bad tracepoint spec '{text}'",
            "tracepoint:CATEGORY:NAME, e.g. tracepoint:sched:sched_switch",
        )
    return ProbeSpec(kind, target=parts[0], name=parts[1])


def _kprobe(kind: ProbeKind, parts: list[str], text: str) -> ProbeSpec:
    if len(parts) != 1 or not parts[0]:
        raise ProbeSpecError(f"bad {kind} spec '{text}'", f"{kind}:FUNC, e.g. {kind}:vfs_read")
    return ProbeSpec(kind, name=parts[0])


def _offcpu(kind: ProbeKind, parts: list[str], text: str) -> ProbeSpec:
    if len(parts) > 1:
        raise ProbeSpecError(f"bad offcpu spec '{text}'", "offcpu or offcpu:MIN_US")
    min_us = _number(parts[0], "a minimum in µs", text, 0, 2**32 - 1) if parts else 0
    return ProbeSpec(kind, number=min_us)


def _usdt(kind: ProbeKind, parts: list[str], text: str) -> ProbeSpec:
    if len(parts) != 3 or not all(parts):
        raise ProbeSpecError(f"bad usdt spec '{text}'", "usdt:TARGET:PROVIDER:NAME")
    return ProbeSpec(kind, target=parts[0], provider=parts[1], name=parts[2])


_PARSERS = {
    ProbeKind.PROFILE: _profile,
    ProbeKind.SOFTWARE: _perf_event,
    ProbeKind.HARDWARE: _perf_event,
    ProbeKind.UPROBE: _user,
    ProbeKind.URETPROBE: _user,
    ProbeKind.TRACEPOINT: _tracepoint,
    ProbeKind.KPROBE: _kprobe,
    ProbeKind.KRETPROBE: _kprobe,
    ProbeKind.OFFCPU: _offcpu,
    ProbeKind.USDT: _usdt,
}
