"""Real-kernel tests. They need root and a kernel that loads our program.

Run as root they never skip: if BPF cannot load, every test here fails with
the reason, whatever the environment variables say. Without root they skip
and say why (under CI, which must run them for real, they fail instead).
"""

from __future__ import annotations

import os

import pytest

from bpftop.bpf.program import CpuSampler

_verdict: str | None = None


def _bpf_unavailable() -> str:
    """'' when a real program loads here, else the reason it does not."""
    global _verdict
    if _verdict is None:
        if os.geteuid() != 0:
            _verdict = "the eBPF tests need root (run ./scripts/test.sh as root or with sudo)"
        else:
            try:
                with CpuSampler(99) as sampler:
                    sampler.load()
                _verdict = ""
            except Exception as err:  # whatever stops the load is the reason, said once
                _verdict = f"BPF cannot load here: {type(err).__name__}: {err}"
    return _verdict


@pytest.fixture(scope="session", autouse=True)
def _require_bpf() -> None:
    """Before any other fixture (session-wide, autouse): run, fail or skip."""
    reason = _bpf_unavailable()
    if not reason:
        return
    if os.geteuid() == 0:
        pytest.fail(f"{reason} (run as root, the eBPF tests must run)", pytrace=False)
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the eBPF tests for real)", pytrace=False)
    pytest.skip(reason)
