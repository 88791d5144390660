"""BCC's library is loaded with lazy binding: its functions are bound when first called."""

from __future__ import annotations

import os
import subprocess
import sys

from bpftop.bpf.environment import LIBBCC

CHILD = """
import sys
if sys.argv[1] == "now":  # what the bindings' own ctypes load alone does
    import ctypes
    ctypes.CDLL("{lib}")
from bpftop.bpf.environment import import_bcc
import_bcc()
"""


def _libbcc_bindings(mode: str) -> int:
    """Symbol bindings the dynamic linker made for libbcc while BCC was imported."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(lib=LIBBCC), mode],
        env={**os.environ, "LD_DEBUG": "bindings"}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return sum(1 for line in out.stderr.splitlines() if "binding file" in line and LIBBCC in line)


def test_importing_bcc_binds_a_fraction_of_what_an_immediate_load_binds() -> None:
    lazy, now = _libbcc_bindings("lazy"), _libbcc_bindings("now")
    assert now > 1000, "an immediate load binds every function libbcc calls"
    assert lazy < now / 3, (lazy, now)
