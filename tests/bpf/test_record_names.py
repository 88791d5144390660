"""How `record` names C++ code, against the real kernel: `--names short`
names C++ functions as perf names them (no parameters, no return type), the
default keeps the full form; code no symbol names (libgcc_s's unwinder,
stripped) is one frame per function, at its .eh_frame FDE's start, not one
per instruction. The workload throws and catches C++ exceptions
(thrower.cc), so its stacks hold its own C++ functions, libstdc++'s and
libgcc_s's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bpftop.symbols.elf.index import ElfIndex
from bpftop.symbols.frame import FileOffset
from bpftop.symbols.unwind.fde_index import FdeIndex
from tests.bpf.test_record import parse_folded
from tests.bpf.test_targets import record

THROWS = "600000"  # ~2.5 s here
LIBGCC = "/lib/x86_64-linux-gnu/libgcc_s.so.1"


def _user_frames(out: Path) -> set[str]:
    return {f for stack in parse_folded(out) for f in stack[1:] if not f.endswith("_[k]")}


def _thrower(workloads: Path) -> list[str]:
    return ["-F", "499", "--", str(workloads / "thrower"), THROWS, "go"]


@pytest.fixture(scope="module")
def full_names(workloads: Path, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("names") / "full.folded"
    record(out, *_thrower(workloads))
    return _user_frames(out)


def test_record_names_cxx_functions_short_only_when_asked(
    workloads: Path, tmp_path: Path, full_names: set[str]
) -> None:
    short = tmp_path / "short.folded"
    record(short, "--names", "short", *_thrower(workloads))
    short_names = _user_frames(short)
    assert "fail(long)" in full_names and "fail" not in full_names
    assert "fail" in short_names and "main" in short_names
    with_parameters = {f for f in short_names if f.endswith(")") and "(" in f}
    assert not with_parameters, with_parameters


def test_unnamed_code_is_one_frame_per_function(full_names: set[str]) -> None:
    index = ElfIndex.load(LIBGCC)
    assert isinstance(index, ElfIndex)
    fdes = FdeIndex.load([LIBGCC])
    unnamed = {
        int(m[1], 16) for f in full_names if (m := re.fullmatch(r"libgcc_s\.so\.1\+0x(\w+)", f))
    }
    print(f"{len(unnamed)} unnamed libgcc_s frames: {sorted(map(hex, unnamed))}")
    assert unnamed, "the unwinder's stripped code was sampled"
    for offset in unnamed:
        vaddr = index.vaddr_for_offset(FileOffset(offset))
        assert vaddr is not None and fdes.start_of(vaddr) == vaddr, hex(offset)
