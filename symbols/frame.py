"""The value every resolved (or unresolvable) address becomes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum


class Unresolved(StrEnum):
    """Why a frame has no function name."""

    UNMAPPED = "unmapped address"
    NO_SYMBOLS = "no symbols in file"
    FILE_UNREADABLE = "file unreadable"
    PROCESS_GONE = "process gone"
    ANONYMOUS = "anonymous memory (JIT?)"
    KERNEL_HIDDEN = "kernel symbols hidden"
    STACK_UNREADABLE = "stack could not be read"


@dataclass(frozen=True, slots=True)
class Frame:
    """One stack frame, resolved or not.

    ``function`` is None when the address could not be named; then ``reason``
    says why and ``offset`` is the offset into ``module`` (a file offset for
    user code), so the frame still prints as ``libfoo.so+0x1a2b``.
    When resolved, ``offset`` is the offset from the function's start.
    ``module`` is the clean path of the mapped file (``/usr/lib/.../libc.so.6``),
    ``[kernel]``, a kernel module name, ``[vdso]``, or "" when nothing is known.
    """

    function: str | None
    module: str
    offset: int
    kernel: bool = False
    reason: Unresolved | None = None

    @property
    def module_name(self) -> str:
        """The module's basename, for display."""
        return os.path.basename(self.module) if self.module.startswith("/") else self.module

    @property
    def label(self) -> str:
        """What the frame is called on screen and in folded output."""
        if self.function is not None:
            return self.function
        if self.module:
            return f"{self.module_name}+0x{self.offset:x}"
        return "[unknown]"
