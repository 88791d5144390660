"""The collector's stack cache: each distinct stack is symbolized once, root
first, with the reasons behind its unknown frames; turning source lines on
or off rebuilds stacks as they come back."""

from __future__ import annotations

import dataclasses
from array import array
from collections.abc import Sequence

from bpftop.bpf.raw import RawSample
from bpftop.symbols.frame import Frame, Unresolved
from bpftop.symbols.hints import Hints
from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.collect.stacks import (
    MISSING_USER_STACK,
    StackCache,
    max_stack_depth,
    unknown_keys,
    unknown_shares,
)


class CountingSymbolizer(Symbolizer):
    """Names user address A ``u<A>`` and kernel address A ``k<A>``; counts the calls."""

    def __init__(self) -> None:  # no caches, no files: nothing of the real one is used
        self.calls: list[str] = []

    def user_frames(
        self, pid: int, addrs: Sequence[int], image: int | None = None
    ) -> tuple[Frame, ...]:
        self.calls.append("user")
        return tuple(Frame(f"u{a}", "/bin/app", 0) for a in addrs)

    def with_source_lines(
        self, pid: int, addrs: Sequence[int], image: int | None = None
    ) -> tuple[Frame, ...]:
        self.calls.append("lines")
        return tuple(Frame(f"u{a}", "/bin/app", 0, file="app.c", line=a) for a in addrs)

    def kernel_frames(self, addrs: Sequence[int]) -> tuple[Frame, ...]:
        self.calls.append("kernel")
        return tuple(Frame(f"k{a}", "[kernel]", 0, kernel=True) for a in addrs)

    def in_fileless_code(self, pid: int, addr: int, image: int | None = None) -> bool:
        return addr >= JIT  # "JIT code" at and above JIT


JIT = 1000


def sample(user: tuple[int, ...], kernel: tuple[int, ...] = (), user_error: str = "") -> RawSample:
    return RawSample(7, 7, user, kernel, count=1, user_error=user_error)


def test_frames_are_root_first_and_built_once_per_distinct_stack() -> None:
    symbolizer = CountingSymbolizer()
    cache = StackCache(symbolizer, offsets=False, mangled=False)
    # addresses innermost first, as the kernel gives them
    stack = cache.lookup(sample((3, 2, 1), (9, 8)))
    # (u1 is no entry point: the walk stopped short, and the stack says so at its root)
    assert [f.function for f in stack.frames] == ["[truncated]", "u1", "u2", "u3", "k8", "k9"]
    assert cache.lookup(sample((3, 2, 1), (9, 8))) is stack
    assert symbolizer.calls == ["user", "kernel"], "the second lookup symbolizes nothing"
    cache.lookup(sample((4, 2, 1), (9, 8)))
    assert symbolizer.calls.count("user") == 2, "another address stack is a new stack"


def test_a_stack_packed_by_the_drain_is_the_stack_its_addresses_are() -> None:
    """The walker's stacks come with their packed addresses (``user_key``): the
    same cache entry as the same addresses without them (perf_event's samples)."""
    symbolizer = CountingSymbolizer()
    cache = StackCache(symbolizer, offsets=False, mangled=False)
    user = (0x7F00_0000_1234, 0x5500_0000_0042, 1)
    stack = cache.lookup(sample(user))
    drained = RawSample(7, 7, user, (), 1, user_key=array("Q", user).tobytes())
    assert drained == sample(user), "a sample is its fields, however it came"
    assert cache.lookup(drained) is stack
    other = RawSample(7, 7, (9, 9), (), 1, user_key=array("Q", (9, 9)).tobytes())
    assert cache.lookup(other) is not stack
    assert symbolizer.calls.count("user") == 2


def test_source_lines_rebuild_stacks_only_on_a_change() -> None:
    symbolizer = CountingSymbolizer()
    cache = StackCache(symbolizer, offsets=False, mangled=False)
    plain = cache.lookup(sample((2, 1)))
    cache.show_source_lines(False)  # no change: the stack is kept
    assert cache.lookup(sample((2, 1))) is plain
    cache.show_source_lines(True)
    lined = cache.lookup(sample((2, 1)))
    assert lined is not plain
    assert [f.line for f in lined.frames] == [None, 1, 2]  # [truncated], then the frames
    assert symbolizer.calls.count("lines") == 1


def test_unknown_reasons_truncation_and_a_missing_user_stack() -> None:
    cache = StackCache(CountingSymbolizer(), offsets=False, mangled=False)
    # the outermost user frame is named but is no entry point: cut short
    cut = cache.lookup(sample((2, 1)))
    assert cut.unknown == ((Unresolved.STACK_TRUNCATED, ""),)
    unreadable = cache.lookup(sample((), (5,), user_error="EFAULT"))
    assert unreadable.frames[0] is MISSING_USER_STACK
    assert unreadable.unknown == ((Unresolved.STACK_UNREADABLE, ""),)


def test_offsets_and_mangled_relabel_every_frame_of_the_stack() -> None:
    cache = StackCache(CountingSymbolizer(), offsets=True, mangled=False)
    assert [f.function for f in cache.lookup(sample((2, 1), (9,))).frames] == [
        "[truncated]",  # bpftop's marker: no offset
        "u1+0x0",
        "u2+0x0",
        "k9+0x0",
    ]


def test_unknown_keys_name_the_file_only_where_the_hint_depends_on_it() -> None:
    frames = [
        Frame(None, "/lib/libz.so.1", 0x10, reason=Unresolved.NO_SYMBOLS),
        Frame(None, "/lib/libz.so.1", 0x20, reason=Unresolved.NO_SYMBOLS),
        Frame(None, "/bin/app", 0x30, reason=Unresolved.UNMAPPED),
        Frame("main", "/bin/app", 0),
    ]
    assert unknown_keys(frames, truncated=Unresolved.STACK_TRUNCATED) == (
        (Unresolved.NO_SYMBOLS, "/lib/libz.so.1"),
        (Unresolved.UNMAPPED, ""),
        (Unresolved.STACK_TRUNCATED, ""),
    )


def test_unknown_shares_most_samples_first_with_hints() -> None:
    counts = {(Unresolved.UNMAPPED, ""): 3, (Unresolved.STACK_TRUNCATED, ""): 10}
    shares = unknown_shares(counts, Hints())
    assert [(s.reason, s.samples) for s in shares] == [
        ("stack truncated", 10),
        ("unmapped address", 3),
    ]
    assert all(s.hint for s in shares)


def test_max_stack_depth_is_the_kernels_limit() -> None:
    assert max_stack_depth() > 0


def test_a_stack_as_deep_as_the_walk_is_too_deep_not_truncated() -> None:
    cache = StackCache(CountingSymbolizer(), offsets=False, mangled=False)
    cache._max_depth = 2
    deep = cache.lookup(sample((2, 1)))
    assert deep.unknown == ((Unresolved.STACK_TOO_DEEP, ""),)
    cache._max_depth = 3
    assert cache.lookup(sample((3, 1))).unknown == ((Unresolved.STACK_TRUNCATED, ""),)


class CxxSymbolizer(CountingSymbolizer):
    def user_frames(
        self, pid: int, addrs: Sequence[int], image: int | None = None
    ) -> tuple[Frame, ...]:
        self.calls.append("user")
        return tuple(Frame(f"f{a}(int)", "/bin/app", 0, mangled=f"_Z2f{a}i") for a in addrs)


def test_short_names_rebuild_stacks_only_on_a_change() -> None:
    cache = StackCache(CxxSymbolizer(), offsets=False, mangled=False, short_names=True)
    short = cache.lookup(sample((2, 1)))
    assert [f.function for f in short.frames] == ["[truncated]", "f1", "f2"]
    cache.use_short_names(True)  # no change: the stack is kept
    assert cache.lookup(sample((2, 1))) is short
    cache.use_short_names(False)
    assert [f.function for f in cache.lookup(sample((2, 1))).frames][1:] == ["f1(int)", "f2(int)"]


class EntrySymbolizer(CountingSymbolizer):
    """Names address 1 ``_start``: a stack that ends there is whole."""

    def user_frames(
        self, pid: int, addrs: Sequence[int], image: int | None = None
    ) -> tuple[Frame, ...]:
        return tuple(Frame("_start" if a == 1 else f"u{a}", "/bin/app", 0) for a in addrs)


def test_a_stack_cut_short_goes_under_truncated_and_a_whole_one_under_its_root() -> None:
    cache = StackCache(EntrySymbolizer(), offsets=False, mangled=False)
    whole = cache.lookup(sample((3, 2, 1)))
    assert [f.function for f in whole.frames] == ["_start", "u2", "u3"]
    cut = cache.lookup(sample((3, 2)))  # the walk stopped at u2: no second root
    assert [f.function for f in cut.frames] == ["[truncated]", "u2", "u3"]
    assert (Unresolved.STACK_TRUNCATED, "") in cut.unknown


def test_a_walk_on_by_frame_pointer_from_undescribed_file_code_is_cut_there() -> None:
    """The walker had no mapping of frame 1's code and asked the frame pointer
    for its caller: in a file's code (a library mapped since) the callers are
    garbage and left out, the stack marked; in JIT code they are kept."""
    cache = StackCache(CountingSymbolizer(), offsets=False, mangled=False)
    undescribed = cache.lookup(dataclasses.replace(sample((3, 2, 1)), fp_from=1))
    assert [f.function for f in undescribed.frames] == ["[truncated]", "u2", "u3"]
    assert undescribed.unknown == ((Unresolved.STACK_UNDESCRIBED, ""),)
    jit = cache.lookup(dataclasses.replace(sample((3, JIT, 1)), fp_from=1))
    assert [f.function for f in jit.frames] == ["[truncated]", "u1", f"u{JIT}", "u3"]
    assert jit.unknown == ((Unresolved.STACK_TRUNCATED, ""),)  # u1: no entry point


def test_a_table_walk_ended_by_frame_pointer_at_main_is_marked() -> None:
    cache = StackCache(NamedSymbolizer(), offsets=False, mangled=False)
    whole = cache.lookup(sample((3, 2, 1)))
    assert [f.function for f in whole.frames] == ["main", "run", "spin"]
    cut = cache.lookup(dataclasses.replace(sample((3, 2, 1)), fp_end=True))
    assert [f.function for f in cut.frames] == ["[truncated]", "main", "run", "spin"]


NAMES = {1: "main", 2: "run", 3: "spin"}


class NamedSymbolizer(CountingSymbolizer):
    def user_frames(
        self, pid: int, addrs: Sequence[int], image: int | None = None
    ) -> tuple[Frame, ...]:
        return tuple(Frame(NAMES[a], "/bin/app", 0) for a in addrs)
