"""The one exception family for problems a user must fix.

Every error carries a one-line message, a one-line hint and the process exit
code; the CLI prints ``bpftop: <message> (<hint>)`` and exits with the code,
never a traceback. Messages name things bpftop does not control (symbols,
paths, process names): :func:`spell_controls` shows their control characters
as ``^[`` and ``\\x85`` instead of writing them to the terminal (and a
newline cannot split the line). Expected misses (an address without a
symbol, a stack the kernel could not read) are values, not exceptions.
"""

from __future__ import annotations

_SPELLING: dict[int, str] = {
    **{code: f"^{chr(code + 0x40)}" for code in range(0x20)},
    0x7F: "^?",
    **{code: f"\\x{code:02x}" for code in range(0x80, 0xA0)},
}


def spell_controls(text: str) -> str:
    """``text`` with each C0 control, DEL and C1 control spelled out as ``less``
    and ``perf`` do (``^[`` for ESC, ``^?``, ``\\x85``); unchanged without them."""
    if text.isprintable():
        return text
    return text.translate(_SPELLING)


class BpftopError(Exception):
    """Base class: ``str(err)`` is the one line the user sees."""

    exit_code = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        line = f"{self.message} ({self.hint})" if self.hint else self.message
        return spell_controls(line)


class InternalError(BpftopError):
    """A bug of ours, still one line (the traceback is in the log: crash_log)."""

    exit_code = 70  # EX_SOFTWARE


class UsageError(BpftopError):
    """Bad command-line input."""

    exit_code = 2


class PermissionsError(BpftopError):
    """Not root, or lacking CAP_BPF / CAP_PERFMON."""

    exit_code = 77


class NoSuchProcessError(BpftopError):
    """The target PID does not exist (or is not visible to us)."""

    exit_code = 3


class BccMissingError(BpftopError):
    """BCC's Python bindings cannot be imported."""

    exit_code = 4


class BpfLoadError(BpftopError):
    """The kernel (verifier) or the compiler rejected the BPF program."""

    exit_code = 5


class OutputError(BpftopError):
    """A file we were asked to write cannot be written."""

    exit_code = 6


class PerfEventError(BpftopError):
    """perf_event_open(2) or its ring cannot be used (the early, compile-free sampler)."""

    exit_code = 7
