"""The merge of Python frames into a native stack (tui/collect/python_frames.py):
each eval-loop frame takes its Python frames; a `-X perf` trampoline below
it (a perf-map frame named py::) is dropped, since the Python frames name it
already, except past the end of a walk cut at its limit."""

from __future__ import annotations

from bpftop.symbols.frame import Frame
from bpftop.symbols.python.runtime import PythonRuntime
from bpftop.tui.collect.python_frames import CUT_FRAME, merge

PYTHON = "/usr/bin/python3.13"
PERF_MAP = "/tmp/perf-7.map"
EVAL = 0x5000
RUNTIME = PythonRuntime(7, PYTHON, "3.13", 0, 0, eval_ranges=((EVAL, EVAL + 0x1000),))


def _py(name: str) -> Frame:
    return Frame(f"{name} (/x.py)", "/x.py", 0, file="/x.py")


def _native() -> tuple[list[int], list[Frame]]:
    """Innermost first: C leaf, eval(burn), py::burn, the interpreter's own
    trampoline evaluator, eval(run), py::run, eval(<module>), py::<module>, main."""
    frames = [
        (0x9000, Frame("clock_gettime", "/lib/libc.so.6", 0)),
        (EVAL + 0x10, Frame("_PyEval_EvalFrameDefault", PYTHON, 0)),
        (0x7000, Frame("py::burn:/x.py", PERF_MAP, 0)),
        (0x6000, Frame("py_trampoline_evaluator", PYTHON, 0)),
        (EVAL + 0x20, Frame("_PyEval_EvalFrameDefault", PYTHON, 0)),
        (0x7010, Frame("py::run:/x.py", PERF_MAP, 0)),
        (0x6000, Frame("py_trampoline_evaluator", PYTHON, 0)),
        (EVAL + 0x30, Frame("_PyEval_EvalFrameDefault", PYTHON, 0)),
        (0x7020, Frame("py::<module>:/x.py", PERF_MAP, 0)),
        (0x8000, Frame("main", PYTHON.replace("python3.13", "app"), 0)),
    ]
    return [a for a, _ in frames], [f for _, f in frames]


def _names(frames: tuple[Frame, ...]) -> list[str]:
    return [f.label for f in frames]


def test_trampolines_under_merged_eval_frames_are_dropped() -> None:
    addrs, native = _native()
    python = [(_py("burn"), True), (_py("run"), True), (_py("<module>"), True)]
    merged = merge(RUNTIME, addrs, native, python)
    assert _names(merged) == [
        "clock_gettime", "burn (/x.py)", "run (/x.py)", "<module> (/x.py)", "main",
    ]  # fmt: skip


def test_trampolines_past_a_cut_walk_stay_as_the_only_names_there() -> None:
    addrs, native = _native()
    python = [(_py("burn"), True), (CUT_FRAME, True)]
    merged = merge(RUNTIME, addrs, native, python)
    assert _names(merged) == [
        "clock_gettime", "burn (/x.py)", CUT_FRAME.label, "py::run:/x.py", "py::<module>:/x.py",
        "main",
    ]  # fmt: skip


def test_other_jit_frames_are_kept() -> None:
    addrs, native = _native()
    native[2] = Frame("LazyCompile:burn", PERF_MAP, 0)
    python = [(_py("burn"), True), (_py("run"), True), (_py("<module>"), True)]
    merged = merge(RUNTIME, addrs, native, python)
    assert "LazyCompile:burn" in _names(merged)
    assert not any(n.startswith("py::") for n in _names(merged))


def test_eval_frames_are_told_by_address_never_by_name() -> None:
    """A cold part of the eval loop named after another symbol takes the Python
    frames; a frame named _PyEval_EvalFrameDefault outside the ranges does not."""
    frames = [
        (0x9000, Frame("clock_gettime", "/lib/libc.so.6", 0)),
        (EVAL + 0x800, Frame("Py_CompileStringExFlags", PYTHON, 0x1234)),  # cold part
        (0x6500, Frame("_PyEval_EvalFrameDefault", PYTHON, 0)),  # by name only
        (0x8000, Frame("main", "/usr/bin/app", 0)),
    ]
    python = [(_py("burn"), False), (_py("run"), True)]
    merged = merge(RUNTIME, [a for a, _ in frames], [f for _, f in frames], python)
    assert _names(merged) == ["clock_gettime", "burn (/x.py)", "run (/x.py)", "main"]


def test_a_build_running_python_outside_the_eval_ranges_still_gets_its_frames() -> None:
    """3.14's tail-calling build runs Python code in _TAIL_CALL_* functions:
    no eval frame is found, nothing fails, and the Python frames go at the
    root end (what docs/python.md says of that untested build)."""
    frames = [
        (0x9000, Frame("clock_gettime", "/lib/libc.so.6", 0)),
        (0x6100, Frame("_TAIL_CALL_CALL", PYTHON, 0)),
        (0x6200, Frame("_TAIL_CALL_CALL", PYTHON, 0)),
        (0x8000, Frame("main", "/usr/bin/app", 0)),
    ]
    python = [(_py("burn"), True), (_py("run"), True)]
    merged = merge(RUNTIME, [a for a, _ in frames], [f for _, f in frames], python)
    assert _names(merged) == ["clock_gettime", "main", "burn (/x.py)", "run (/x.py)"]
