"""A program's run numbers by BPF_OBJ_GET_INFO_BY_FD are its fdinfo's (real kernel)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from bpftop.bpf.program import CpuSampler
from bpftop.bpf.stats import fdinfo_numbers, run_numbers


def _fdinfo(fd: int) -> tuple[int, int, int]:
    fields = fdinfo_numbers(fd)
    return fields["run_time_ns"], fields["run_cnt"], fields.get("recursion_misses", 0)


def test_every_programs_numbers_lie_between_two_fdinfo_reads(workloads: Path) -> None:
    """While sampling (the numbers grow), each program's numbers read by the
    syscall lie between its fdinfo's read just before and just after; the
    handlers that ran have runs and run time."""
    target = subprocess.Popen([str(workloads / "split"), "30"])
    try:
        with CpuSampler(999) as sampler:
            sampler.load()
            sampler.set_targets([target.pid])
            sampler.start()
            time.sleep(0.3)
            read = []
            for name, fn in list(sampler._bpf.funcs.items()):
                before = _fdinfo(fn.fd)
                numbers = run_numbers(fn.fd)
                read.append((name, before, numbers, _fdinfo(fn.fd)))
    finally:
        target.kill()
        target.wait()
    assert len(read) > 10
    for name, before, numbers, after in read:
        assert all(b <= n <= a for b, n, a in zip(before, numbers, after, strict=True)), name
    assert sum(numbers[1] for _, _, numbers, _ in read) > 100
    assert sum(numbers[0] for _, _, numbers, _ in read) > 0
