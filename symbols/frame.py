"""The value every resolved (or unresolvable) address becomes, and the kinds of address.

An :data:`Address` is an absolute address in a process (or the kernel), a
:data:`FileOffset` is an offset into a mapped file, and an :data:`ElfVaddr` is
a virtual address as the ELF file itself numbers it (what ``nm`` prints):
symbolization juggles all three, kept apart by type.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from typing import NewType

Address = NewType("Address", int)
FileOffset = NewType("FileOffset", int)
ElfVaddr = NewType("ElfVaddr", int)


class Unresolved(StrEnum):
    """Why a frame has no function name."""

    UNMAPPED = "unmapped address"
    NO_SYMBOLS = "no symbols in file"
    NOT_COVERED = "address not covered by any symbol"  # the file has a full .symtab
    FILE_UNREADABLE = "file unreadable"
    PROCESS_GONE = "process gone"
    ANONYMOUS = "anonymous memory (JIT?)"
    JIT_NO_PERF_MAP = "JIT region without perf map"
    NOT_CODE = "address in memory that holds no code"  # heap, stack, data: a wrong return address
    STACK_TRUNCATED = "stack truncated"  # the walk stopped before an entry point
    STACK_TOO_DEEP = "stack deeper than the walk limit"
    # the walk reached code mapped after the walker was given the process's mappings
    STACK_UNDESCRIBED = "stack reached code not described yet"
    KERNEL_HIDDEN = "kernel symbols hidden"
    STACK_UNREADABLE = "stack could not be read"
    CODE_FREED = "Python code object freed before it was named"


# Where a complete user stack starts: the program's or a thread's entry point
# (with Debian's libc, ``__libc_start_call_main`` is the outermost frame a
# frame-pointer walk reaches). A stack whose outermost named frame is none of
# these was cut short.
THREAD_ENTRY_FUNCTIONS = frozenset(
    {
        "_start",
        "__libc_start_main",
        "__libc_start_call_main",
        "main",
        "start_thread",
        "clone",
        "clone3",
        "__clone",
        "__clone3",
        "thread_start",
        # Go's runtime: a goroutine's stack ends in runtime.goexit, an M's (OS
        # thread's) in runtime.mstart below runtime.clone, the first thread's in
        # runtime.rt0_go; the linker adds an ABI suffix to assembly functions.
        "runtime.goexit",
        "runtime.mstart",
        "runtime.clone",
        "runtime.rt0_go",
        "_rt0_amd64",
        "_rt0_amd64_linux",
    }
)
# Where a frame-pointer walk ends with glibc: main's caller, and a thread's
# start_thread (clone3 clears the frame pointer); a walk by unwind tables goes
# on to _start or clone3. A table walk that fell back to the frame pointer for
# its last step and stopped at one of these was cut short of its real root.
FRAME_POINTER_ROOTS = frozenset(
    {"main", "__libc_start_call_main", "__libc_start_main", "start_thread"}
)
# Go's linker names assembly functions NAME.abi0 (and a wrapper NAME.abiinternal).
_GO_ABI_SUFFIXES = (".abi0", ".abiinternal")


@dataclass(frozen=True, slots=True)
class Frame:
    """One stack frame, resolved or not.

    ``function`` is None when the address could not be named; then ``reason``
    says why and ``offset`` is the offset into ``module`` (a file offset for
    user code), so the frame still prints as ``libfoo.so+0x1a2b``.
    When resolved, ``offset`` is the offset from the function's start.
    ``module`` is the clean path of the mapped file (``/usr/lib/.../libc.so.6``),
    ``[kernel]``, a kernel module name, ``[vdso]``, ``[jit]``, or "" when
    nothing is known.

    ``function`` is the name for display (demangled); ``mangled`` keeps the
    symbol as the file spells it when demangling changed it (for export).
    ``inlined`` marks a frame that DWARF says was inlined into the frame that
    follows it in the stack; ``file``/``line`` are source positions when known;
    ``start_line`` is the first line of a Python frame's function (its code
    object's ``co_firstlineno``: pprof's ``Function.start_line``).
    """

    function: str | None
    module: str
    offset: int
    kernel: bool = False
    reason: Unresolved | None = None
    mangled: str | None = None
    inlined: bool = False
    file: str | None = None
    line: int | None = None
    start_line: int | None = None

    @property
    def module_name(self) -> str:
        """The module's basename, for display."""
        return os.path.basename(self.module) if self.module.startswith("/") else self.module

    @property
    def label_with_offset(self) -> str:
        """:attr:`label` with ``+0xOFF`` for a named frame (perf's ``sym+off`` form)."""
        if self.function is not None:
            return f"{self.function}+0x{self.offset:x}"
        return self.label

    @property
    def raw_function(self) -> str | None:
        """The function as the symbol table spells it (mangled, for export)."""
        return self.mangled if self.mangled is not None else self.function

    @property
    def label(self) -> str:
        """What the frame is called on screen and in folded output."""
        if self.function is not None:
            return self.function
        if self.module:
            return f"{self.module_name}+0x{self.offset:x}"
        return "[unknown]"


def looks_truncated(
    outermost: Frame, depth: int, max_depth: int, table_walk_fp_end: bool = False
) -> bool:
    """True when a user stack of ``depth`` addresses, ``outermost`` its last
    frame, did not reach an entry point: it is as deep as the walk allows, or
    its outermost frame is named but is no program or thread entry (an
    unnamed one carries its own reason). ``table_walk_fp_end``: a walk by
    unwind tables took its last step by frame pointer, so stopping where
    frame pointers stop (:data:`FRAME_POINTER_ROOTS`) is short of the root."""
    if depth >= max_depth:
        return True
    name = outermost.function
    if name is None:
        return False
    for suffix in _GO_ABI_SUFFIXES:
        name = name.removesuffix(suffix)
    if table_walk_fp_end and name in FRAME_POINTER_ROOTS:
        return True
    return name not in THREAD_ENTRY_FUNCTIONS


def truncation(
    outermost: Frame, depth: int, max_depth: int, table_walk_fp_end: bool = False
) -> Unresolved | None:
    """Why a user stack (``depth`` addresses, ``outermost`` its last frame) is
    incomplete: as deep as the walk goes (STACK_TOO_DEEP), or the walk stopped
    at a named frame that is no entry point (STACK_TRUNCATED; see
    :func:`looks_truncated` for ``table_walk_fp_end``); None if whole."""
    if depth >= max_depth:
        return Unresolved.STACK_TOO_DEEP
    if looks_truncated(outermost, depth, max_depth, table_walk_fp_end):
        return Unresolved.STACK_TRUNCATED
    return None
