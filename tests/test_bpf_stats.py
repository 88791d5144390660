"""Reading a BPF program's kernel statistics from its fdinfo (no kernel needed)."""

from __future__ import annotations

import pytest

from bpftop.bpf import stats
from bpftop.bpf.stats import parse_fdinfo, run_numbers

# /proc/self/fdinfo/<prog fd> as kernel 6.x writes it.
FDINFO = """pos:\t0
flags:\t02000002
mnt_id:\t16
ino:\t1057
prog_type:\t7
prog_jited:\t1
prog_tag:\t3b185187f1855c4c
memlock:\t4096
prog_id:\t123
run_time_ns:\t48213
run_cnt:\t17
recursion_misses:\t5
verified_insns:\t21
"""


def test_fdinfo_numbers_include_run_stats_and_skipped_runs() -> None:
    fields = parse_fdinfo(FDINFO)
    assert (fields["run_time_ns"], fields["run_cnt"], fields["recursion_misses"]) == (48213, 17, 5)
    assert "prog_tag" not in fields, "a hex tag is not a number"


def test_without_the_bpf_syscall_the_numbers_come_from_fdinfo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where bpf()'s number is not known (another architecture), fdinfo answers."""
    monkeypatch.setattr(stats, "_SYS_BPF", None)
    monkeypatch.setattr(stats, "fdinfo_numbers", lambda fd: parse_fdinfo(FDINFO))
    assert run_numbers(3) == (48213, 17, 5)
