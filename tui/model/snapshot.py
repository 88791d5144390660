"""Immutable values the collector thread posts to the app once per tick."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from bpftop.bpf.python_walk import PythonCounts
from bpftop.bpf.raw import MapUsage
from bpftop.bpf.unwinder import UnwindState

__all__ = [
    "CallNode",
    "CollectionStats",
    "HotFunction",
    "MapUsage",
    "Overhead",
    "Phase",
    "ProcessInfo",
    "PythonCounts",
    "Snapshot",
    "ThreadShare",
    "UnknownShare",
    "UnwindState",
]


EARLY_QUALITY_PREFIX = "perf_event"  # stack qualities of the compile-free early sampler
# The stack quality of BPF samples whose context gave the .eh_frame walker no user
# registers: their user stacks are frame-pointer walks (bpf_get_stackid).
WALKER_NOT_STARTED_QUALITY = "BPF frame pointers (the walker could not start)"


class Phase(StrEnum):
    """Where the collector is; shown in the header."""

    STARTING = "starting"
    COMPILING = "compiling BPF program…"
    SAMPLING = "sampling"
    EXITED = "process exited"
    SAVED = "saved profile"


CHILDREN_HINT_CPU = 5.0
"""Under this CPU % a target is taken to leave its work to its children."""


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """Facts about the target process (from psutil), as of this tick; with -a
    (``pid`` 0), a summary of the system and of what was sampled."""

    pid: int
    name: str
    cmdline: str
    cpu_percent: float
    rss_bytes: int
    num_threads: int
    alive: bool
    # -a (pid 0): the whole system; cpu_percent sums its CPUs, num_threads and
    # processes count those sampled so far, rss_bytes is the memory in use.
    processes: int = 0
    cpus: int = 0
    stopped: bool = False  # SIGSTOPped: nothing runs, so nothing is sampled
    # Child processes running now that are not profiled (no --children); counted
    # only while the target itself uses under CHILDREN_HINT_CPU (the header's hint).
    children: int = 0


@dataclass(frozen=True, slots=True)
class CollectionStats:
    """How much was collected and what was lost, cumulative since start.

    ``lost_events``: perf-buffer records the kernel could not deliver.
    ``dropped_samples``: samples not counted because the in-kernel counts map
    was full. ``stack_errors`` counts samples whose stack could not be read,
    by kind (``"user EFAULT"`` -> n), as pairs so the value stays immutable.
    ``stack_quality`` counts samples by how their user stack was made
    (``"perf_event, frame pointers"`` before BPF counts, ``"BPF .eh_frame
    walker"``, ``"BPF frame pointers"``); empty when not known (saved files).
    ``left_out`` counts samples not in the profile because they could not be
    as complete as BPF's (early samples of a Python process: no Python
    frames), by reason.
    """

    probe: str
    elapsed_s: float = 0.0
    total_samples: int = 0
    samples_per_s: float = 0.0
    lost_events: int = 0
    dropped_samples: int = 0
    stack_errors: tuple[tuple[str, int], ...] = ()
    stack_quality: tuple[tuple[str, int], ...] = ()
    left_out: tuple[tuple[str, int], ...] = ()

    @property
    def left_out_samples(self) -> int:
        return sum(n for _, n in self.left_out)

    @property
    def early_samples(self) -> int:
        """Samples taken by perf_event before BPF counted (their stacks may differ)."""
        return sum(n for q, n in self.stack_quality if q.startswith(EARLY_QUALITY_PREFIX))

    @property
    def walker_not_started(self) -> int:
        """BPF samples the walker could not start on (frame pointers instead): no user
        registers in the context, or no walker program loaded for the probe kind."""
        return dict(self.stack_quality).get(WALKER_NOT_STARTED_QUALITY, 0)

    @property
    def failed_stacks(self) -> int:
        return sum(n for _, n in self.stack_errors)


class CallNode:
    """A node of the top-down call tree (immutable: mypy rejects assignments).

    The root is a synthetic node named "all"; its children are processes (by
    name), theirs the outermost frames. ``children`` are sorted by
    ``total_count``, hottest first. ``total_count`` = ``self_count`` + the
    children's totals.

    Derived views (filters, callers, zoom chains) build plain nodes; the
    collector's snapshots hold ``tui.model.store.LiveNode``s, which make their
    children only when first asked for. Derive changed copies with
    ``_replace``. Two nodes are equal when their fields and subtrees are.
    """

    __slots__ = (
        "_children",
        "inlined",
        "kernel",
        "label",
        "module",
        "self_count",
        "source",
        "total_count",
        "unresolved",
    )

    def __init__(
        self,
        label: str,
        module: str = "",
        kernel: bool = False,
        self_count: int = 0,
        total_count: int = 0,
        children: tuple[CallNode, ...] = (),
        source: str = "",
        inlined: bool = False,
        unresolved: bool = False,
    ) -> None:
        self.label: Final = label
        self.module: Final = module
        self.kernel: Final = kernel
        self.self_count: Final = self_count
        self.total_count: Final = total_count
        self._children: Final = children
        self.source: Final = source  # "file.c:123" where DWARF knows it, else ""
        self.inlined: Final = inlined  # DWARF says this frame was inlined into its caller
        self.unresolved: Final = unresolved  # the frame could not be named

    @property
    def children(self) -> tuple[CallNode, ...]:
        """Hottest first (ties by key)."""
        return self._children

    @property
    def has_children(self) -> bool:
        """Whether ``children`` is not empty (without making them, for a live node)."""
        return bool(self.children)

    @property
    def key(self) -> tuple[str, str, bool]:
        """Identity among siblings; stable from tick to tick."""
        return (self.label, self.module, self.kernel)

    def children_with(self, min_total: int) -> tuple[CallNode, ...]:
        """The children with at least ``min_total`` samples: the first ones."""
        return tuple(itertools.takewhile(lambda c: c.total_count >= min_total, self.children))

    def _fields(self) -> tuple[str, str, bool, int, int, str, bool, bool]:
        return (
            self.label, self.module, self.kernel, self.self_count, self.total_count,
            self.source, self.inlined, self.unresolved,
        )  # fmt: skip

    def _replace(self, **changes: Any) -> CallNode:
        """A plain copy with some fields changed (children kept unless given)."""
        label, module, kernel, self_count, total_count, source, inlined, unresolved = self._fields()
        fields: dict[str, Any] = {
            "label": label, "module": module, "kernel": kernel, "self_count": self_count,
            "total_count": total_count, "children": self.children, "source": source,
            "inlined": inlined, "unresolved": unresolved,
        }  # fmt: skip
        fields.update(changes)
        return CallNode(**fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CallNode):
            return NotImplemented
        return self is other or (
            self._fields() == other._fields() and self.children == other.children
        )

    def __hash__(self) -> int:
        return hash((self.key, self.self_count, self.total_count))

    def __repr__(self) -> str:
        return (
            f"CallNode({self.label!r}, {self.module!r}, kernel={self.kernel}, "
            f"self={self.self_count}, total={self.total_count}, "
            f"children={len(self.children)})"
        )


@dataclass(frozen=True, slots=True)
class HotFunction:
    """One row of the hot-functions table.

    ``self_count``: samples with this function as the leaf. ``total_count``:
    samples with it anywhere on the stack, counted once per sample even when
    it recurses.
    """

    label: str
    module: str
    kernel: bool
    self_count: int
    total_count: int
    source: str = ""


@dataclass(frozen=True, slots=True)
class UnknownShare:
    """Samples with at least one frame left unnamed for one reason."""

    reason: str
    samples: int
    hint: str


@dataclass(frozen=True, slots=True)
class Overhead:
    """What profiling costs: bpftop's own CPU and its BPF programs' run time."""

    cpu_percent: float = 0.0
    bpf_run_ns_per_s: float = 0.0
    bpf_runs_per_s: float = 0.0


@dataclass(frozen=True, slots=True)
class ThreadShare:
    """Samples of one thread since start (or since the last reset)."""

    tid: int
    name: str
    samples: int
    idle: int = 0  # of which idle (tui/model/idle.py)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything the app shows, as of one tick."""

    seq: int
    phase: Phase
    stats: CollectionStats
    process: ProcessInfo | None = None
    tree: CallNode = field(default_factory=lambda: CallNode("all"))
    hot: tuple[HotFunction, ...] = ()
    # The same table grouped by symbol (Profile.hot_functions(by_symbol=True)); None: not made.
    hot_by_symbol: tuple[HotFunction, ...] | None = None
    message: str = ""
    unknown: tuple[UnknownShare, ...] = ()
    maps: tuple[MapUsage, ...] = ()
    overhead: Overhead = field(default_factory=Overhead)
    time_mode: str = ""  # TimedProfile.label: the mode (and thread) tree/hot were built for
    threads: tuple[ThreadShare, ...] = ()  # hottest first
    probes: tuple[str, ...] = ()  # every probe used this session (one profile each)
    weight_unit: str = ""  # "": counts are samples/hits; "ns": time (uretprobe, offcpu)
    probe_events: int = 0  # hits of a weighted probe (calls, blocks), beside its time
    # A weighted probe's hits per stack (record's last snapshot only; cumulative):
    events_tree: CallNode | None = None
    probe_message: str = ""  # the last probe switch: done, or why it was rejected
    unwind: UnwindState | None = None  # the .eh_frame walker's tables (None: no walker)
    python: PythonCounts | None = None  # what the Python frame walker did (None: none)
    bpf_problem: str = ""  # why BPF could not load: every sample is perf_event's
    bpf_loading: bool = False  # BPF is still compiling or loading: no BPF cost to show yet
    notices: tuple[str, ...] = ()  # standing facts of the run (fallback kernel headers)
