"""tests/bpf decides for itself whether to run: as root a BPF program that
cannot load fails the tests with the reason (never a skip), whatever the
environment says; without root they skip and say why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

ONE_BPF_TEST = "tests/bpf/test_sampler.py::test_exit_event_of_the_main_thread"


def test_bpf_tests_fail_as_root_and_skip_without_it_when_bpf_cannot_load(tmp_path: Path) -> None:
    fake = tmp_path / "bcc"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('libbcc.so.0: no such file')\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # CI unset: no excuse either way
    env["PYTHONPATH"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", ONE_BPF_TEST],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = result.stdout
    if os.geteuid() == 0:
        assert result.returncode == 1, out
        assert "1 error" in out and "skipped" not in out, out  # the set-up fails the test
        assert "BPF cannot load here: BccMissingError" in out and "libbcc.so.0" in out, out
    else:
        assert result.returncode == 0, out
        assert "1 skipped" in out and "the eBPF tests need root" in out, out
