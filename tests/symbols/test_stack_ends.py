"""Where a user stack counts as whole: glibc's entry points and Go's runtime
outermost frames (with the Go linker's ABI suffixes); anything else named is cut."""

from __future__ import annotations

import pytest

from bpftop.symbols.frame import Frame, Unresolved, truncation


@pytest.mark.parametrize(
    "name",
    ["_start", "clone3", "runtime.goexit.abi0", "runtime.goexit", "runtime.mstart.abi0",
     "runtime.clone.abi0", "runtime.rt0_go.abi0"],
)  # fmt: skip
def test_entry_frames_end_a_whole_stack(name: str) -> None:
    assert truncation(Frame(name, "/bin/x", 0), 5, 128) is None


@pytest.mark.parametrize("name", ["main.run", "runtime.main", "goexit.abi0", "rshot::run"])
def test_other_named_outermost_frames_are_cut(name: str) -> None:
    assert truncation(Frame(name, "/bin/x", 0), 5, 128) is Unresolved.STACK_TRUNCATED
