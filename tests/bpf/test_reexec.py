"""A process that execs again and again is named in each image, launched
(`record -- reexec 3 750`: 4 images of 0.75 s; `reexec 59 50`: 60 of 50 ms)
and attached by pid (`record -p`). Image K burns in image_{K%4}_burn, so a
stack named from another image's maps shows the wrong burner or none. Each
stack has its real root: _start, or [truncated] for one the walk cut short
(in an image's first milliseconds the walker has no tables and walks by frame
pointer, which stops at __libc_start_call_main), never a second root beside
_start."""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.bpf.kernel_objects import held_by
from tests.conftest import BPFTOP, collecting

BURNERS = tuple(f"image_{k}_burn" for k in range(4))
NAMED_SHARE = 0.99


def stacks_of(path: Path) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text().splitlines():
        frames, _, count = line.rpartition(" ")
        stacks[tuple(frames.split(";"))] += int(count)
    return stacks


# The roots a stack may have: the program's entry, the mark of a stack cut
# short, a user stack that could not be read; and one no symbol names (the
# loader's entry in stripped ld.so, a stack of an image gone unread).
ROOTS = {"_start", "[truncated]", "[missing user stack]"}


def check_one_root(stacks: Counter[tuple[str, ...]]) -> None:
    roots = Counter(s[1] for s in stacks if len(s) > 1)
    unnamed = {r for r in roots if r == "[unknown]" or "+0x" in r or r.endswith("_[k]")}
    wrong = {r: n for r, n in roots.items() if r not in ROOTS | unnamed}
    assert not wrong, f"second roots: {wrong}; all roots: {roots.most_common(8)}"


def check_named(stacks: Counter[tuple[str, ...]], share: float = NAMED_SHARE) -> None:
    total = sum(stacks.values())
    assert total >= 40, f"only {total} samples"  # (3 s of CPU at most: 297 at 99 Hz)
    named = sum(n for s, n in stacks.items() if "[unknown]" not in s)
    unnamed = [(";".join(s)[-160:], n) for s, n in stacks.items() if "[unknown]" in s]
    assert named >= share * total, f"{named} of {total} named; unnamed: {unnamed[:5]}"
    for burner in BURNERS:  # each image's own function, about a quarter each
        share = sum(n for s, n in stacks.items() if burner in s) / total
        assert share >= 0.1, f"{burner}: {share:.0%} of {total} samples"


@pytest.mark.parametrize(("images", "ms"), [(4, 750), (60, 50)], ids=["4x750ms", "60x50ms"])
def test_a_launched_command_that_execs_is_named_in_every_image(
    workloads: Path, tmp_path: Path, images: int, ms: int
) -> None:
    out = tmp_path / "out.folded"
    done = subprocess.run(
        [str(BPFTOP), "record", "-o", str(out), "--",
         str(workloads / "reexec"), str(images - 1), str(ms)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Launched, the command is held at each exec until the image is described,
    # and again where its loader has mapped its libraries (until then, 60
    # images of 50 ms kept ~1.6% of samples wholly [unknown]).
    stacks = stacks_of(out)
    check_named(stacks)
    check_one_root(stacks)


HANDOVER_S = 5.0
"""After BPF's programs load, how long until they count (the walker's tables
are awaited up to 3 s first): till then an early perf_event sampler runs."""


def _bpf_attached(pid: int) -> bool:
    return collecting(pid) and bool(held_by(pid).prog_ids)


def wait_for_bpf(pid: int) -> None:
    deadline = time.monotonic() + 120
    while not _bpf_attached(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(HANDOVER_S)


@pytest.mark.parametrize(("images", "ms"), [(4, 750), (60, 50)], ids=["4x750ms", "60x50ms"])
def test_an_attached_process_that_execs_is_named_in_every_image(
    workloads: Path, tmp_path: Path, images: int, ms: int
) -> None:
    out = tmp_path / "out.folded"
    target = subprocess.Popen(
        [str(workloads / "reexec"), str(images - 1), str(ms)],
        stdin=subprocess.PIPE, env={**os.environ, "REEXEC_WAIT": "1"},
    )  # fmt: skip
    assert target.stdin is not None
    try:
        bpftop = subprocess.Popen(
            [str(BPFTOP), "record", "-p", str(target.pid), "-o", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for_bpf(bpftop.pid)
        target.stdin.write(b"x")
        target.stdin.close()
        assert target.wait(timeout=120) == 0
        _, err = bpftop.communicate(timeout=60)
        assert bpftop.returncode == 0, err
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()
    stacks = stacks_of(out)
    check_named(stacks)
    check_one_root(stacks)


def test_a_process_that_execs_before_bpf_counts_is_named_or_left_out(
    workloads: Path, tmp_path: Path
) -> None:
    """`record -p` on `reexec 59 50` already running: it execs every 50 ms
    while perf_event samples (before BPF counts images, which also happens
    with a warm program image). An early sample is named from the image it
    was taken in, or left out and counted ("of an image replaced before it
    was read"); none is named from another image's maps."""
    out = tmp_path / "out.folded"
    target = subprocess.Popen([str(workloads / "reexec"), "59", "50"])
    try:
        result = subprocess.run(
            [str(BPFTOP), "record", "-p", str(target.pid), "-F", "499", "-d", "2", "-o", str(out)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        target.kill()
        target.wait()
    assert result.returncode == 0, result.stderr
    assert "early, of an image replaced before it was read" in result.stderr, result.stderr
    stacks = stacks_of(out)
    check_named(stacks)
    check_one_root(stacks)
