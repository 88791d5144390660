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


@pytest.mark.parametrize("name", ["main", "__libc_start_call_main", "start_thread"])
def test_where_frame_pointers_end_is_cut_for_a_table_walk_only(name: str) -> None:
    """A frame-pointer walk ends there (`--unwind fp`: whole); a walk by tables
    that took its last step by frame pointer (no table yet) stopped short of
    _start or clone3."""
    frame = Frame(name, "/lib/libc.so.6", 0)
    assert truncation(frame, 5, 128) is None
    assert truncation(frame, 5, 128, table_walk_fp_end=True) is Unresolved.STACK_TRUNCATED


def test_go_roots_stay_whole_after_a_frame_pointer_step() -> None:
    frame = Frame("runtime.goexit.abi0", "/bin/x", 0)
    assert truncation(frame, 5, 128, table_walk_fp_end=True) is None
