"""The ``bpftop`` command opens its perf events before any heavy import.

``tui/cli/main.py`` checks the arguments (kernel threads included) and opens
the early perf_event sampler before it loads the collector; every module it
imports at the top is on that path. Importing tui.collect.targets there (for
the kernel-thread check) cost ~0.08 s of launch -> first sample.
"""

from __future__ import annotations

import os
import subprocess
import sys

HEAVY = ("psutil", "elftools", "numpy", "bcc", "textual", "bpftop.tui.collect.targets")


def test_the_command_module_imports_nothing_heavy() -> None:
    listed = subprocess.run(
        [sys.executable, "-c", "import sys, bpftop.tui.cli.main; print(*sys.modules)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert "bpftop.tui.cli.pid_checks" in listed, "the kernel-thread check is there"
    assert [name for name in HEAVY if name in listed] == []


def test_numpy_starts_no_blas_threads_asks_no_huge_pages_and_leaves_no_variable() -> None:
    """numpy's OpenBLAS would start a spinning worker thread per core at import;
    and numpy would ask for huge pages for its large arrays."""
    code = (
        "import os\n"
        "from bpftop.tui.cli.main import import_numpy_quietly\n"
        "import_numpy_quietly()\n"
        "import numpy\n"
        "from numpy._core.multiarray import _get_madvise_hugepage\n"
        "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'),\n"
        "      os.environ.get('NUMPY_MADVISE_HUGEPAGE'), _get_madvise_hugepage())\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_NUM_THREADS") and k != "NUMPY_MADVISE_HUGEPAGE"
    }
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.split()
    assert out == ["1", "None", "None", "False"]
