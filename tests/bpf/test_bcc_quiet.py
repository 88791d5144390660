"""BCC's own messages never reach the terminal: an attach that libbcc refuses
(it prints its reason on file descriptor 2) gives bpftop's one-line error
only. The plans here skip the checks that refuse such specs before BCC is
asked, so libbcc itself is the one that fails."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from bpftop.bpf.attach import Attachment
from bpftop.bpf.probes import parse_spec
from bpftop.bpf.program import CpuSampler
from bpftop.bpf.resolve import Plan, UnsupportedProbeError


@pytest.fixture(scope="module")
def sampler() -> Iterator[CpuSampler]:
    with CpuSampler(99) as s:
        s.load()
        s.set_targets([])
        s.start()
        yield s


def fd2_during(action: object) -> str:
    """What was written on file descriptor 2 while ``action()`` ran."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            action()  # type: ignore[operator]
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode(errors="replace")


PLANS = {
    "tracepoint": Plan(parse_spec("tracepoint:sched:sched_switch"), tracepoint="sched:no_such_tp"),
    "hardware": Plan(parse_spec("hardware:cycles"), perf_type=0, perf_config=0),
}


@pytest.mark.parametrize("kind", list(PLANS))
def test_a_refused_attach_prints_nothing_of_bccs(sampler: CpuSampler, kind: str) -> None:
    if kind == "hardware" and os.path.exists("/sys/bus/event_source/devices/cpu"):
        pytest.skip("this machine has a hardware PMU: the attach would succeed")
    errors: list[UnsupportedProbeError] = []

    def attach() -> None:
        try:
            Attachment(sampler._bpf, PLANS[kind], slot=1).detach()
        except UnsupportedProbeError as err:
            errors.append(err)

    written = fd2_during(attach)
    assert errors, "the attach was not refused"
    assert written == "", f"BCC wrote on fd 2: {written!r}"
