"""What one drain of the kernel maps yields: plain integers, no symbols."""

from __future__ import annotations

from dataclasses import dataclass, field

# Addresses as the kernel gave them, innermost (the sampled IP) first.
Addresses = tuple[int, ...]
# The same as the kernel wrote them: native 64-bit words (``array("Q", addresses)``'s bytes).
Packed = bytes
# A Python frame as the kernel read it: (code object address, instruction
# index, is_entry, identity of the code object then: 0 unreadable); a stack
# of them is innermost first (bpf/python.bpf.c).
RawPyFrame = tuple[int, int, bool, int]


@dataclass(frozen=True, slots=True)
class WalkedStack:
    """A stack of the in-kernel walker (bpf/unwind.bpf.c's ``struct ustack``):
    its addresses packed, and where the walk leaned on the frame pointer.

    ``fp_from``: the first frame whose caller the frame pointer was asked for
    because its pc lay in none of the mappings the walker was given (a library
    mapped since, or JIT code), -1 if none; ``fp_end``: the last frame's caller
    was sought by frame pointer (the walk ends where frame pointers end, short
    of the entry point a table walk reaches)."""

    packed: Packed
    fp_from: int = -1
    fp_end: bool = False


@dataclass(frozen=True, slots=True)
class RawSample:
    """Samples of one thread with one (user, kernel) stack pair.

    A stack that could not be read is empty and its ``*_error`` names the
    errno (``"EFAULT"``, ``"EEXIST"``, ``"ENOMEM"``); for a sample taken in
    user mode the kernel stack is simply empty, not an error. Weighted probes
    (uretprobe latency, offcpu) also give ``weight_ns``: the time summed over
    the ``count`` events. CPU samples of a described Python process carry its
    thread's Python frames (``python_stack``, innermost first).
    """

    tgid: int
    tid: int
    user_stack: Addresses
    kernel_stack: Addresses
    count: int
    user_error: str = ""
    kernel_error: str = ""
    weight_ns: int = 0
    python_stack: tuple[RawPyFrame, ...] = ()  # the thread's Python frames, if any
    python_truncated: bool = False  # ... cut at the root end (too deep)
    image: int = 0  # how many times the process had exec'd since attach (its image)
    # How the walker walked ``user_stack`` (:class:`WalkedStack`); -1 and False
    # for a stack it did not walk.
    fp_from: int = -1
    fp_end: bool = False
    # ``user_stack`` packed, when the drain read it so (the walker's stacks): what
    # the stack cache looks a stack up by; b"": pack ``user_stack`` for that.
    user_key: Packed = field(default=b"", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ExitEvent:
    """A thread of a target exited (tid == tgid: the main thread)."""

    tgid: int
    tid: int
    comm: str


@dataclass(frozen=True, slots=True)
class MapUsage:
    """One of bpftop's BPF maps: its type, entries in use vs max, key/value size.

    For the per-tick sample and stack maps, ``used`` is what the last drained
    generation held when it was drained (its peak for that tick).
    """

    name: str
    kind: str
    used: int
    max_entries: int
    key_size: int
    value_size: int
    slots_used: bool = False  # an array whose ``used`` counts written slots (the walker's)


@dataclass(frozen=True, slots=True)
class RawTick:
    """Everything drained from the kernel in one tick (deltas, not totals)."""

    samples: tuple[RawSample, ...] = ()
    exits: tuple[ExitEvent, ...] = ()
    execs: tuple[int, ...] = ()  # tgids that exec'd (a new image to symbolize)
    # a held command whose loader mapped its libraries (it is stopped: bpftop.bpf.c)
    loaded: tuple[int, ...] = ()
    forks: tuple[int, ...] = ()  # new tasks of followed targets (--children)
    fork_parents: tuple[int, ...] = ()  # the tgid that forked each of ``forks``
    lost_events: int = 0
    dropped_samples: int = 0
    interval_s: float = 0.0
    walked_samples: int = 0  # samples whose user stack the .eh_frame walker made

    @property
    def total_samples(self) -> int:
        return sum(s.count for s in self.samples)
