"""Exit codes a script can rely on: ``diff --folded | head`` (a reader that
closes the pipe early) ends quietly with a SIGPIPE's code, as git and grep do."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import BPFTOP


def test_diff_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    saved = tmp_path / "big.folded"
    saved.write_text("".join(f"main;f{i};g{i % 97} {i % 100 + 1}\n" for i in range(50_000)))
    child = subprocess.Popen(
        [str(BPFTOP), "diff", "--folded", str(saved), str(saved)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert child.stdout is not None and child.stderr is not None
    first = child.stdout.readline()
    child.stdout.close()  # as head -1 does: ~2 MB were left to write
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 141, err
    assert first == b"main;f0;g0 1 1\n"
    assert err == "", "nothing said: the reader had what it wanted"
