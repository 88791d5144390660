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

Everything else that differs between probe kinds is one :class:`KindRule` per
kind in :data:`KINDS`: how its spec is parsed, how it is resolved and attached
(:class:`Attach`), its BPF handler and program type (which walker copies its
handlers tail-call), what one event is called and whether its stacks carry
time, whether they get Python frames, and what the probe dialog completes.
A new kind is a new rule here plus its handler in ``bpftop.bpf.c``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum

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
    def rule(self) -> KindRule:
        """What this spec's kind does (:data:`KINDS`)."""
        return KINDS[self.kind]

    @property
    def weighted(self) -> bool:
        """True when each stack carries time (ns), not just a count."""
        return bool(self.rule.time)

    @property
    def is_profile(self) -> bool:
        """CPU sampling at a rate (``profile:hz:N``, the default): the probe the
        early perf_event sampler and ``-F`` stand for."""
        return self.kind is ProbeKind.PROFILE

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
    return KINDS[kind].parse(kind, parts, text)


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
    events = KINDS[kind].event_names or {}
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


class Attach(Enum):
    """How a kind's probe is resolved (bpf/resolve.py) and attached (bpf/attach.py)."""

    PERF_EVENT = "perf_event"
    """A perf_event_open(2) sampling event (its type and config from the rule)."""
    TRACEPOINT = "tracepoint"
    KERNEL_FUNCTION = "kernel function"
    """A kprobe (the kernel needs CONFIG_KPROBES)."""
    USER_FUNCTION = "user function"
    """A uprobe at each function a SYMBOL (or glob) names in TARGET."""
    USDT = "usdt"
    """A uprobe at a USDT note's address, its semaphore raised while attached."""


class ProgramType(StrEnum):
    """The BPF program type of a kind's handler, as BCC's attribute names it. A
    tail call stays within its type: the walkers have a copy per type."""

    PERF_EVENT = "PERF_EVENT"
    KPROBE = "KPROBE"
    TRACEPOINT = "TRACEPOINT"


class Completion(Enum):
    """What the probe dialog completes after ``KIND:``."""

    NOTHING = "nothing"
    EVENT_NAMES = "event names"
    TRACEPOINTS = "tracepoints"
    USER_SYMBOLS = "the targets' libraries and functions"


PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE = 0, 1  # linux/perf_event.h
SOFTWARE_CPU_CLOCK = SOFTWARE_EVENTS["cpu-clock"]

Parse = Callable[[ProbeKind, list[str], str], ProbeSpec]


@dataclass(frozen=True, slots=True)
class KindRule:
    """What one probe kind does, everywhere it differs from the others."""

    parse: Parse
    attach: Attach
    program: ProgramType
    handler: bytes
    """Its handler in bpftop.bpf.c (a copy per handler slot: ``_1`` counts for slot 1)."""
    events: str
    """What one event is called: samples, calls, returns, hits, blocks."""
    time: str = ""
    """For a kind whose stacks carry nanoseconds, what they measure (wall,
    off-cpu); "" for a kind that counts events."""
    python: bool = True
    """Whether its stacks get Python frames (the Python walker's copy of its program type)."""
    completion: Completion = Completion.NOTHING
    perf_type: int = -1
    """Attach.PERF_EVENT: perf_event_open's type."""
    event_names: Mapping[str, int] | None = None
    """Attach.PERF_EVENT: the event names its specs take, to perf_event_open's
    config (None: always cpu-clock)."""
    by_frequency: bool = False
    """Attach.PERF_EVENT: the spec's number is a rate in Hz, not a period."""
    tracepoint: str = ""
    """Attach.TRACEPOINT: the tracepoint it always uses ("": the spec's own)."""
    at_return: bool = False
    """Its handler runs when the function returns (kretprobe)."""
    return_handler: bytes = b""
    """A second handler at the function's return, the first at its entry
    (uretprobe: each call's time)."""
    one_copy: bool = False
    """Its handler has one copy whose slot is in a map, not one per slot (offcpu)."""


KINDS: dict[ProbeKind, KindRule] = {
    ProbeKind.PROFILE: KindRule(
        _profile, Attach.PERF_EVENT, ProgramType.PERF_EVENT, b"on_cpu_sample", "samples",
        perf_type=PERF_TYPE_SOFTWARE, by_frequency=True,
    ),
    ProbeKind.SOFTWARE: KindRule(
        _perf_event, Attach.PERF_EVENT, ProgramType.PERF_EVENT, b"on_cpu_sample", "samples",
        completion=Completion.EVENT_NAMES, perf_type=PERF_TYPE_SOFTWARE,
        event_names=SOFTWARE_EVENTS,
    ),
    ProbeKind.HARDWARE: KindRule(
        _perf_event, Attach.PERF_EVENT, ProgramType.PERF_EVENT, b"on_cpu_sample", "samples",
        completion=Completion.EVENT_NAMES, perf_type=PERF_TYPE_HARDWARE,
        event_names=HARDWARE_EVENTS,
    ),
    ProbeKind.UPROBE: KindRule(
        _user, Attach.USER_FUNCTION, ProgramType.KPROBE, b"on_probe_hit", "calls",
        completion=Completion.USER_SYMBOLS,
    ),
    ProbeKind.URETPROBE: KindRule(
        _user, Attach.USER_FUNCTION, ProgramType.KPROBE, b"on_call_entry", "calls",
        time="wall", python=False, completion=Completion.USER_SYMBOLS,
        return_handler=b"on_call_return",
    ),
    ProbeKind.TRACEPOINT: KindRule(
        _tracepoint, Attach.TRACEPOINT, ProgramType.TRACEPOINT, b"on_tracepoint", "hits",
        completion=Completion.TRACEPOINTS,
    ),
    ProbeKind.KPROBE: KindRule(
        _kprobe, Attach.KERNEL_FUNCTION, ProgramType.KPROBE, b"on_kprobe_hit", "calls"
    ),
    ProbeKind.KRETPROBE: KindRule(
        _kprobe, Attach.KERNEL_FUNCTION, ProgramType.KPROBE, b"on_kprobe_hit", "returns",
        at_return=True,
    ),
    ProbeKind.OFFCPU: KindRule(
        _offcpu, Attach.TRACEPOINT, ProgramType.TRACEPOINT, b"tracepoint__sched__sched_switch",
        "blocks", time="off-cpu", tracepoint="sched:sched_switch", one_copy=True,
    ),
    ProbeKind.USDT: KindRule(
        _usdt, Attach.USDT, ProgramType.KPROBE, b"on_probe_hit", "hits"
    ),
}  # fmt: skip
"""Every probe kind's rule."""
