"""`record --names short` against the real kernel: C++ functions named as perf
names them (no parameters, no return type); the default keeps the full form.
The workload throws and catches C++ exceptions (thrower.cc), so its stacks
hold its own C++ functions and libstdc++'s."""

from __future__ import annotations

from pathlib import Path

from tests.bpf.test_record import parse_folded
from tests.bpf.test_targets import record

THROWS = "600000"  # ~2.5 s here


def _user_frames(out: Path) -> set[str]:
    return {f for stack in parse_folded(out) for f in stack[1:] if not f.endswith("_[k]")}


def test_record_names_cxx_functions_short_only_when_asked(workloads: Path, tmp_path: Path) -> None:
    command = ["--", str(workloads / "thrower"), THROWS, "go"]
    full, short = tmp_path / "full.folded", tmp_path / "short.folded"
    record(full, "-F", "499", *command)
    record(short, "-F", "499", "--names", "short", *command)
    full_frames, short_frames = _user_frames(full), _user_frames(short)
    assert "fail(long)" in full_frames and "fail" not in full_frames
    assert "fail" in short_frames and "main" in short_frames
    with_parameters = {f for f in short_frames if f.endswith(")") and "(" in f}
    assert not with_parameters, with_parameters
