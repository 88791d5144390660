"""Kernel struct offsets from the running kernel's BTF (bpf/btf.py)."""

from __future__ import annotations

from pathlib import Path

from bpftop.bpf.btf import member_offset as cached_offset


def member_offset(*names: str, btf_path: str = "/sys/kernel/btf/vmlinux") -> int | None:
    """Read from the BTF itself, not from the disk cache of an earlier run."""
    return cached_offset(*names, btf_path=btf_path, cache_dir=None)


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


def test_answers_are_kept_on_disk_per_kernel(tmp_path: Path) -> None:
    btf = tmp_path / "vmlinux"
    btf.write_bytes(Path("/sys/kernel/btf/vmlinux").read_bytes())
    cache = tmp_path / "cache"
    compute = cached_offset.__wrapped__  # past the in-memory cache
    first = compute("task_struct", "thread", "fsbase", btf_path=str(btf), cache_dir=cache)
    assert first is not None and first > 0
    assert compute("no_such_struct", "x", btf_path=str(btf), cache_dir=cache) is None
    btf.write_bytes(bytes(btf.stat().st_size))  # same size, no BTF: the entries answer
    assert compute("task_struct", "thread", "fsbase", btf_path=str(btf), cache_dir=cache) == first
    assert compute("no_such_struct", "x", btf_path=str(btf), cache_dir=cache) is None
    assert compute("task_struct", "thread", "fsbase", btf_path=str(btf), cache_dir=None) is None
    btf.write_bytes(bytes(100))  # another size: another kernel, read again
    assert compute("task_struct", "thread", "fsbase", btf_path=str(btf), cache_dir=cache) is None
