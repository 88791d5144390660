"""Node.js on the real kernel: JS functions named from V8's perf map
(``node --perf-basic-prof``) beside ``perf record -g`` on the same process at
the same time; without the map, ``record`` says what to turn on; in its own
pid and mount namespace the map is read through the target's root; and a map
that grows while the process runs is read again (a function compiled later is
named).

The workload (tests/workloads/nodeshot.js): run -> hotA / hotB, 2:1."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.bpf.test_record import parse_folded, record
from tests.conftest import BPFTOP

Stacks = Counter[tuple[str, ...]]
NODE = shutil.which("node")
JIT_FLAGS = ("--perf-basic-prof", "--no-turbo-inlining")
# A V8 perf-map name: "JS:" then the tier (* optimized, ^ baseline, ~ interpreted).
_JS = re.compile(r"JS:[*^~+]?(\w+) ")


def _js(frame: str) -> str | None:
    hit = _JS.match(frame)
    return hit.group(1) if hit else None


def _node_command(workloads: Path, *args: str, flags: tuple[str, ...] = JIT_FLAGS) -> list[str]:
    assert NODE, "node is missing: scripts/setup.sh installs Debian's nodejs when there is none"
    script = workloads / "nodeshot.js"
    assert script.exists(), f"{script} is missing: run scripts/setup.sh"
    return [NODE, *flags, str(script), *args]


def _wait_for_map(path: Path, names: tuple[str, ...], timeout_s: float = 20) -> str:
    """The perf map's text once it names every one of ``names`` optimized."""
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            text = ""
        if all(f"JS:*{name} " in text for name in names):
            return text
        time.sleep(0.1)
    raise AssertionError(f"{path} never named {names} optimized: {text[-500:]!r}")


@contextmanager
def _running(command: list[str], cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``command`` running in ``cwd`` (V8 writes an isolate-*.log there), killed after."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=cwd)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def perf_stacks(data: Path) -> Stacks:
    """Root-first stacks from ``perf script`` (with the process name first,
    as in bpftop's folded files)."""
    text = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "comm,ip,sym"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    stacks: Stacks = Counter()
    for block in text.split("\n\n"):
        lines = block.strip().splitlines()
        if not lines:
            continue
        frames = [line.split(None, 1) for line in lines[1:]]
        names = [f[1].strip() for f in frames if len(f) == 2]
        stacks[(lines[0].strip(), *reversed(names))] += 1
    return stacks


def shares(stacks: Stacks) -> tuple[float, float, float]:
    """(the share of samples naming run -> hotA or hotB, hotA's part of
    those in %, the share whose stack holds node's own ``node::Start``)."""
    total = sum(stacks.values())
    callers: Counter[str] = Counter()
    native = 0
    for stack, n in stacks.items():
        js = [_js(f) for f in stack]
        for callee in ("hotA", "hotB"):
            if callee in js and "run" in js[: js.index(callee)]:
                callers[callee] += n
        native += n * any(f.startswith("node::Start") for f in stack)
    named = sum(callers.values())
    return named / total, 100 * callers["hotA"] / max(1, named), native / total


def test_js_functions_named_from_the_perf_map_beside_perf(workloads: Path, tmp_path: Path) -> None:
    assert shutil.which("perf"), "linux-perf is installed by scripts/setup.sh"
    with _running(_node_command(workloads, "120"), tmp_path) as node:
        _wait_for_map(Path(f"/tmp/perf-{node.pid}.map"), ("hotA", "hotB", "run"))
        data, out = tmp_path / "perf.data", tmp_path / "node.folded"
        perf = subprocess.Popen(
            ["perf", "record", "-q", "-g", "-F", "499", "-p", str(node.pid), "-o", str(data),
             "--", "sleep", "6"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        result = record(node.pid, out, "-F", "499", "-d", "6")
        perf.wait(timeout=60)
    try:
        theirs = perf_stacks(data)  # perf names JIT code from the map when it reads perf.data
    finally:
        Path(f"/tmp/perf-{node.pid}.map").unlink(missing_ok=True)
    assert result.returncode == 0, result.stderr
    assert "perf map" not in result.stderr, result.stderr  # no JIT hint: the map names it
    ours = parse_folded(out)
    (named, a_share, native), (p_named, p_a_share, p_native) = shares(ours), shares(theirs)
    print(
        f"node: bpftop run->hotA|hotB {named:.1%} of {sum(ours.values())}, hotA {a_share:.1f}%,"
        f" node::Start {native:.1%}; perf -g {p_named:.1%} of {sum(theirs.values())},"
        f" hotA {p_a_share:.1f}%, node::Start {p_native:.1%}"
    )
    assert sum(ours.values()) > 300 and sum(theirs.values()) > 300
    assert named >= 0.95, ours.most_common(3)
    # Each share is of a few hundred samples or more (1-2 points of noise each).
    assert abs(a_share - 200 / 3) <= 5
    assert abs(a_share - p_a_share) <= 4
    assert native >= 0.95, ours.most_common(3)  # node's own frames named below the JIT's


def test_record_without_perf_map_says_to_turn_it_on(workloads: Path, tmp_path: Path) -> None:
    flags = ("--no-turbo-inlining",)
    with _running(_node_command(workloads, "120", flags=flags), tmp_path) as node:
        time.sleep(1.5)
        out = tmp_path / "nomap.folded"
        result = record(node.pid, out, "-d", "3")
    assert result.returncode == 0, result.stderr
    assert not Path(f"/tmp/perf-{node.pid}.map").exists()
    stacks = parse_folded(out)
    assert sum(stacks.values()) > 50
    assert not any(_js(f) for s in stacks for f in s)
    hints = [line for line in result.stderr.splitlines() if "perf map" in line]
    assert len(hints) == 1, result.stderr
    share = float(hints[0].split("% of the samples")[0].rsplit(" ", 1)[-1])
    assert share >= 80 and "node --perf-basic-prof" in hints[0], hints[0]


def _child_of(pid: int, timeout_s: float = 10) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.02)
    raise AssertionError(f"process {pid} started no child")


def test_perf_map_in_its_own_namespaces_and_read_again_as_it_grows(
    workloads: Path, tmp_path: Path
) -> None:
    """node in its own pid and mount namespace with a private /tmp: its map
    is /tmp/perf-1.map inside, invisible to the host at /tmp/perf-PID.map.
    lateC is compiled only after bpftop first read that map."""
    late = Path(f"/dev/shm/bpftop-node-late-{tmp_path.name}")
    late.unlink(missing_ok=True)
    node_command = " ".join(_node_command(workloads, "120", str(late)))
    inner = f"mount -t tmpfs tmpfs /tmp && exec {node_command}"
    unshare = ["unshare", "--pid", "--mount", "--fork", "sh", "-c", inner]
    with _running(unshare, tmp_path) as shell:
        node = _child_of(shell.pid)
        inside = Path(f"/proc/{node}/root/tmp/perf-1.map")
        map_text = _wait_for_map(inside, ("hotA", "hotB"))
        assert "lateC" not in map_text
        assert not Path(f"/tmp/perf-{node}.map").exists()
        out = tmp_path / "ns.folded"
        command = [str(BPFTOP), "record", "-p", str(node), "-o", str(out), "-d", "9"]
        recording = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(4)  # bpftop read the map when it first saw node, before lateC
            late.touch()
            _, stderr = recording.communicate(timeout=90)
        finally:
            late.unlink(missing_ok=True)
            recording.kill()
        assert "JS:*lateC " in inside.read_text(errors="replace")
    assert recording.returncode == 0, stderr
    leaves: Counter[str | None] = Counter()
    for stack, n in parse_folded(out).items():
        leaves[_js(stack[-1])] += n
    total = sum(leaves.values())
    print(f"namespaced node: leaves {leaves.most_common(4)} of {total}")
    assert leaves["hotA"] + leaves["hotB"] + leaves["lateC"] >= 0.9 * total, leaves
    assert leaves["hotB"] > 0.05 * total and leaves["lateC"] > 0.05 * total, leaves
