"""Kernel struct offsets from the running kernel's BTF (bpf/btf.py)."""

from __future__ import annotations

from pathlib import Path

from bpftop.bpf.btf import member_offset


def test_offsets_of_well_known_members() -> None:
    assert member_offset("list_head", "next") == 0
    assert member_offset("list_head", "prev") == 8
    # A nested member's offset is the sum of the offsets along its path.
    thread = member_offset("task_struct", "thread")
    fsbase = member_offset("thread_struct", "fsbase")
    assert thread is not None and fsbase is not None
    assert member_offset("task_struct", "thread", "fsbase") == thread + fsbase
    # Members of anonymous unions and structs are found through them.
    assert member_offset("sk_buff", "sk") is not None
    assert member_offset("page", "lru") is not None


def test_what_is_not_there_is_none(tmp_path: Path) -> None:
    assert member_offset("task_struct", "no_such_member") is None
    assert member_offset("no_such_struct", "x") is None
    junk = tmp_path / "junk"
    junk.write_bytes(b"\0" * 64)
    assert member_offset("list_head", "next", btf_path=str(junk)) is None
    assert member_offset("list_head", "next", btf_path=str(tmp_path / "missing")) is None
