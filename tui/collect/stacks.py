"""Distinct address stacks, symbolized once each, and what their unknown frames say.

Owns :class:`StackCache` (a sample's address stacks -> root-first frames and
the reasons behind any unknown ones, remembered per distinct stack and
relabeled for ``--offsets`` / ``--mangled``), :func:`relabel`,
:func:`unknown_keys` and :func:`unknown_shares` (the profile's unknown-frame
counts, with hints, as the snapshot shows them). Used only from the collector
thread; no Textual here.
"""

from __future__ import annotations

import dataclasses
from array import array
from collections.abc import Sequence

from bpftop.bpf.raw import RawSample
from bpftop.symbols.frame import Frame, Unresolved, truncation
from bpftop.symbols.hints import Hints
from bpftop.symbols.names.short import is_cxx, short_name
from bpftop.symbols.symbolizer import Symbolizer
from bpftop.tui.collect.python_feed import PythonFeed
from bpftop.tui.model.snapshot import UnknownShare
from bpftop.tui.model.timemode import UnknownKey

# Distinct address stacks remembered with their frames (every IP in a hot loop
# makes a new one, so this is bounded; the symbolizer caches per address).
MAX_CACHED_STACKS = 50_000
MISSING_USER_STACK = Frame("[missing user stack]", "", 0, reason=Unresolved.STACK_UNREADABLE)
MAX_STACK_DEPTH_FILE = "/proc/sys/kernel/perf_event_max_stack"
DEFAULT_MAX_STACK_DEPTH = 127
# Reasons whose hint depends on the file (which debug package would help).
PER_MODULE_REASONS = frozenset(
    {Unresolved.NO_SYMBOLS, Unresolved.NOT_COVERED, Unresolved.FILE_UNREADABLE}
)
# (tgid, image, user addresses, how they were walked, kernel addresses, Python
# frames), packed as 64-bit values: a tuple of 40 addresses is 40 int objects
# (1.7 KB), its bytes 360 bytes. The image (how many times the process had
# exec'd): the same addresses in two images of one process may be two functions.
StackKey = tuple[int, int, bytes, tuple[int, bool], bytes, bytes]


class Stack:
    """One distinct stack, symbolized: its frames, its unknown-frame reasons and,
    for a stack with Python frames, its native frames (as --no-python shows it:
    the interpreter's own frames where the merge put Python's; frames shared)."""

    __slots__ = ("frames", "native", "unknown")

    def __init__(
        self,
        frames: tuple[Frame, ...],
        unknown: tuple[UnknownKey, ...],
        native: tuple[Frame, ...] | None = None,
    ) -> None:
        self.frames = frames
        self.unknown = unknown
        self.native = native


class StackCache:
    """(tgid, user stack, kernel stack) -> :class:`Stack`, built once per distinct stack.

    ``offsets``: name frames ``function+0xOFF`` (one node per address, as
    perf's sym+off); ``mangled``: as the symbol table spells them;
    ``short_names``: C++ functions without parameters and return type.
    """

    def __init__(
        self,
        symbolizer: Symbolizer,
        *,
        offsets: bool,
        mangled: bool,
        python: bool = True,
        short_names: bool = False,
    ) -> None:
        self._symbolizer = symbolizer
        self._offsets, self._mangled = offsets, mangled
        self.short_names = short_names
        self._stacks: dict[StackKey, Stack] = {}
        self._max_depth = max_stack_depth()
        self.source_lines = False  # the frames built now carry file:line
        # Python processes: frames from the kernel walker (off: never told of any)
        self.python = PythonFeed(enabled=python)

    def show_source_lines(self, on: bool) -> None:
        """Build frames with (or without) ``file:line`` from now on.

        On a change the stacks are forgotten: those seen again get new frames,
        and the tree's nodes pick up file:line as those stacks come back.
        """
        if on != self.source_lines:
            self.source_lines = on
            self._stacks.clear()

    def use_short_names(self, on: bool) -> None:
        """Name C++ functions short (or in full) from now on; on a change the
        stacks are forgotten, so those seen again are named the new way."""
        if on != self.short_names:
            self.short_names = on
            self._stacks.clear()

    def lookup(self, sample: RawSample) -> Stack:
        """Root-first frames (user frames outermost first, then kernel frames)
        and why any of them are unknown; symbolized once per distinct stack."""
        key = (
            sample.tgid,
            sample.image,
            sample.user_key or _packed(sample.user_stack),
            (sample.fp_from, sample.fp_end),
            _packed(sample.kernel_stack),
            _packed_python(sample),
        )
        stack = self._stacks.get(key)
        if stack is None:
            stack = self._build(sample)
            if len(self._stacks) >= MAX_CACHED_STACKS:
                self._stacks.clear()  # cheap to rebuild from the per-address caches
            self._stacks[key] = stack
        return stack

    def _build(self, sample: RawSample) -> Stack:
        symbolizer = self._symbolizer
        addrs = sample.user_stack
        cut: Unresolved | None = None
        end = self._described_end(sample)
        if end is not None:
            addrs, cut = addrs[:end], Unresolved.STACK_UNDESCRIBED
        if self.source_lines:
            user = symbolizer.with_source_lines(sample.tgid, addrs, sample.image)
        else:
            user = symbolizer.user_frames(sample.tgid, addrs, sample.image)
        if cut is None and user:
            cut = truncation(user[-1], len(addrs), self._max_depth, sample.fp_end)
        native = user
        if sample.python_stack and end is None:  # Python frames in place of the eval loop's
            user = self.python.merged(sample, user)
        kernel = tuple(reversed(symbolizer.kernel_frames(sample.kernel_stack)))
        head: tuple[Frame, ...] = (MISSING_USER_STACK,) if sample.user_error else ()
        if cut is not None:  # under the thread, never beside the whole stacks' root
            head += (truncated_frame(cut),)
        frames = self._relabeled(head + tuple(reversed(user)) + kernel)
        if user is native:
            return Stack(frames, unknown_keys(frames, cut))
        natives = self._relabeled(head + tuple(reversed(native)) + kernel)
        return Stack(frames, unknown_keys(frames, cut), natives)

    def _described_end(self, sample: RawSample) -> int | None:
        """Where a walked stack stops being trustworthy, if it does: past its
        frame whose caller the frame pointer was asked for because the
        walker had no mapping of its code, unless no file holds that code
        (JIT code, the [vdso]: walked by frame pointer on purpose): a library
        mapped after the walker got the process's mappings, most built
        without frame pointers, gives garbage callers."""
        at = sample.fp_from
        if at < 0 or at + 1 >= len(sample.user_stack):
            return None
        if self._symbolizer.in_fileless_code(sample.tgid, sample.user_stack[at], sample.image):
            return None
        return at + 1

    def _relabeled(self, frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
        if self._offsets or self._mangled or self.short_names:
            short = self.short_names and not self._mangled
            return tuple(relabel(f, self._offsets, self._mangled, short) for f in frames)
        return frames


def _packed(addresses: Sequence[int]) -> bytes:
    return array("Q", addresses).tobytes() if addresses else b""


def _packed_python(sample: RawSample) -> bytes:
    if not sample.python_stack:
        return b""
    # As unsigned 64-bit words: a negative instruction index, a full 64-bit identity.
    flat = [v & 0xFFFF_FFFF_FFFF_FFFF for frame in sample.python_stack for v in frame]
    return array("Q", [*flat, sample.python_truncated]).tobytes()


def relabel(frame: Frame, offsets: bool, mangled: bool, short: bool = False) -> Frame:
    """A named frame renamed: its mangled name, or (``short``) a C++ function's
    short name, and/or with ``+0xOFF``."""
    name = frame.raw_function if mangled else frame.function
    if name is None or name.startswith("["):  # bpftop's own markers: [truncated], ...
        return frame
    if short and is_cxx(frame.mangled):
        name = short_name(name)
    if offsets:
        name = f"{name}+0x{frame.offset:x}"
    return dataclasses.replace(frame, function=name)


TRUNCATED = "[truncated]"


def truncated_frame(cut: Unresolved) -> Frame:
    """The root of a user stack the walk cut short (``cut``: why): its frames
    go under it, not under a second root beside the whole stacks' ``_start``."""
    return Frame(TRUNCATED, "", 0, reason=cut)


def unknown_keys(frames: Sequence[Frame], truncated: Unresolved | None) -> tuple[UnknownKey, ...]:
    """Each (reason, module) of the stack's unnamed frames once, and how the
    stack was cut (``truncated``: a :func:`truncation` reason, or None)."""
    keys = dict.fromkeys(
        (f.reason, f.module if f.reason in PER_MODULE_REASONS else "")
        for f in frames
        if f.reason is not None
    )
    if truncated is not None:
        keys[(truncated, "")] = None
    return tuple(keys)


def unknown_shares(counts: dict[UnknownKey, int], hints: Hints) -> tuple[UnknownShare, ...]:
    """Shares with their hints, most samples first (a file's hint is looked up
    once, off this thread)."""
    shares = []
    for (reason, module), samples in counts.items():
        where = f" ({Frame(None, module, 0).module_name})" if module else ""
        share_hint = hints.hint(Frame(None, module, 0, reason=reason))
        shares.append(UnknownShare(f"{reason.value}{where}", samples, share_hint))
    shares.sort(key=lambda u: (-u.samples, u.reason))
    return tuple(shares)


def max_stack_depth() -> int:
    """How deep the kernel walks stacks (a stack this deep was cut)."""
    try:
        with open(MAX_STACK_DEPTH_FILE) as stream:
            return int(stream.read())
    except (OSError, ValueError):
        return DEFAULT_MAX_STACK_DEPTH
