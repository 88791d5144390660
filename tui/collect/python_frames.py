"""A sample's Python frames, named and merged into its native stack.

Owns :class:`PythonFrames`: per verified Python process, a code-object namer
(:class:`~bpftop.symbols.python.code.CodeNames`), made on first use and
dropped when the process exec's or exits; :meth:`PythonFrames.merged` turns
the kernel's ``(code address, instruction index, is_entry, identity)`` records into
``QUALNAME (FILE:LINE)`` frames and merges them py-spy's way: walking the
native frames from the leaf, each frame of ``_PyEval_EvalFrameDefault``
(recognized by address range, its cold parts included, never by name) is replaced by the Python
frames up to and including the next entry frame (the outermost frame of one
eval-loop invocation); other frames of the interpreter's own file are hidden;
Python frames left over (the native walk stopped early, or no eval frame was
seen) go at the root end; an eval frame with no Python frames left is dropped.
``-X perf`` trampolines (``py::FUNC:FILE`` frames from the perf map, one
below each eval frame) name the Python frames merged there a second time and
are dropped, except past the end of a walk that was cut (there they are the
only names of the Python frames the walk did not reach). A stack cut at the
walker's limit gets a marker frame at the cut. Nothing fails a sample:
misses are unnamed frames.
"""

from __future__ import annotations

from collections.abc import Sequence

from bpftop.bpf.raw import RawSample
from bpftop.symbols.frame import Frame, Unresolved
from bpftop.symbols.python.code import CodeNames
from bpftop.symbols.python.runtime import PythonRuntime
from bpftop.symbols.unwind.perf_trampolines import is_python_trampoline

CUT_FRAME = Frame(
    "[Python frames cut: deeper than the walk limit]", "", 0, reason=Unresolved.STACK_TOO_DEEP
)
NamedPyFrame = tuple[Frame, bool]  # a named Python frame, and whether it is an entry frame


class PythonFrames:
    """Python frames of the sampled processes, named once per code object."""

    def __init__(self) -> None:
        self._names: dict[int, CodeNames] = {}

    def forget(self, pid: int) -> None:
        """``pid`` exec'd or exited: its code objects are gone."""
        names = self._names.pop(pid, None)
        if names is not None:
            names.close()

    def merged(
        self, runtime: PythonRuntime, sample: RawSample, native: tuple[Frame, ...]
    ) -> tuple[Frame, ...]:
        """``native`` (innermost first, as the symbolizer gave it for
        ``sample.user_stack``) with the sample's Python frames merged in."""
        names = self._names.get(runtime.pid)
        if names is None:
            names = self._names[runtime.pid] = CodeNames(
                runtime.pid, runtime.code_type, runtime.layout
            )
        python = [
            (names.frame(code, index, ident), entry)
            for code, index, entry, ident in sample.python_stack
        ]
        if sample.python_truncated:
            python.append((CUT_FRAME, True))
        return merge(runtime, sample.user_stack, native, python)


def merge(
    runtime: PythonRuntime,
    addrs: Sequence[int],
    native: Sequence[Frame],
    python: Sequence[NamedPyFrame],
) -> tuple[Frame, ...]:
    """The merged stack, innermost first (see the module's docstring)."""
    out: list[Frame] = []
    taken = 0
    at = 0  # index into addrs: an address's inline chain shares it
    cut = bool(python) and python[-1][0] is CUT_FRAME
    for frame in native:
        addr = addrs[min(at, len(addrs) - 1)] if addrs else 0
        lookup = addr if at == 0 else addr - 1  # a return address: its call
        at += 0 if frame.inlined else 1
        if not frame.inlined and runtime.in_eval(lookup):
            while taken < len(python):
                out.append(python[taken][0])
                taken += 1
                if python[taken - 1][1]:
                    break
        elif is_python_trampoline(frame):
            if cut and taken == len(python):
                out.append(frame)
        elif frame.module != runtime.path:
            out.append(frame)
    out.extend(frame for frame, _ in python[taken:])
    return tuple(out)
