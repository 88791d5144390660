"""Real-kernel tests. They need root and a kernel that loads our program.

In CI (CI=true) they never skip: if BPF cannot load, every test here fails
with the reason. Elsewhere, without root, they skip and say why.
"""

from __future__ import annotations

import os

import pytest

from bpftop.bpf.errors import BpftopError
from bpftop.bpf.program import CpuSampler

_verdict: str | None = None


def _bpf_unavailable() -> str:
    """'' when a real program loads here, else the reason it does not."""
    global _verdict
    if _verdict is None:
        if os.geteuid() != 0:
            _verdict = "the eBPF tests need root"
        else:
            try:
                with CpuSampler(99) as sampler:
                    sampler.load()
                _verdict = ""
            except BpftopError as err:
                _verdict = f"BPF cannot load here: {err}"
    return _verdict


@pytest.fixture(autouse=True)
def _require_bpf() -> None:
    reason = _bpf_unavailable()
    if not reason:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the eBPF tests for real)")
    pytest.skip(reason)
