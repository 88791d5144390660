"""Folded text streamed from a tree's arrays (``record``'s default output, ``w``)
is byte for byte what the writer of the whole ``SavedProfile`` writes, and
line for line what the node walk of ``folded_oracle`` finds."""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from bpftop.symbols.frame import Frame
from bpftop.symbols.python.code import python_label
from bpftop.tui.cli.files import save_recording
from bpftop.tui.formats import profile_io, saved
from bpftop.tui.formats.folded import frame_label
from bpftop.tui.formats.folded_tree import folded_tree, parse_lines
from bpftop.tui.formats.profile_io import saved_writer, tree_folded_writer, write_folded
from bpftop.tui.formats.saved import ProfileMeta, from_tree, snapshot_meta
from bpftop.tui.model.derived import keep_frames
from bpftop.tui.model.idle import drop_idle
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode, CollectionStats, Phase, Snapshot
from tests.formats.folded_oracle import folded_lines

APP = "/bin/app"
PY = "/srv/app/worker.py"


def user(name: str, line: int = 0) -> Frame:
    return Frame(name, APP, 0, file="app.c" if line else None, line=line or None)


def kernel(name: str) -> Frame:
    return Frame(name, "[kernel]", 0, kernel=True)


def python(qualname: str, line: int) -> Frame:
    return Frame(python_label(qualname, PY, line), PY, 0, file="worker.py", line=line,
                 start_line=line - 2)  # fmt: skip


INLINED = Frame("fast_path", APP, 0, inlined=True, file="app.h", line=7)
UNNAMED = Frame(None, "/usr/lib/libx.so", 0x1A2B)
WAIT = Frame(python_label("Condition.wait", "/usr/lib/python3.11/threading.py", 320),
             "/usr/lib/python3.11/threading.py", 0)  # fmt: skip


def varied() -> Profile:
    """Every kind of frame, three groups of unlike totals (hottest first when
    written), a stack that is a prefix of another, recursion, labels to
    sanitize, and far more stacks than ``saved.CHUNK`` (chunk boundaries)."""
    p = Profile()
    p.add("helper", [user("main")], 1)
    p.add("app", [user("main", 10), user("run"), INLINED], 5)
    p.add("app", [user("main", 10), user("run"), kernel("do_syscall_64"), kernel("vfs_read")], 3)
    p.add("app", [user("main", 10), UNNAMED], 2)
    p.add("app", [user("main", 10), user("run")], 1)  # also a prefix of the others
    p.add("app", [user("main"), user("rec"), user("rec"), user("rec")], 4)
    p.add("a;b\nc", [user("ns::f;g"), user("tab\there"), user("")], 2)
    p.add("worker-1", [user("_start"), python("Worker.run", 42), python("step", 9), WAIT], 6)
    p.add("worker-1", [user("_start"), python("Worker.run", 43)], 2)
    rng = random.Random(7)
    names = [user(f"f{i}", i % 3) for i in range(40)] + [kernel("k0"), INLINED, UNNAMED]
    for _ in range(3 * saved.CHUNK + 17):
        stack = [user("main"), *(rng.choice(names) for _ in range(rng.randint(1, 30)))]
        p.add(rng.choice(["app", "worker-1", "worker-2"]), stack, rng.randint(1, 9))
    p.remove("app", [user("main", 10), UNNAMED], 2)  # a node left without self samples
    return p


def bytes_of(fill: Callable[[IO[bytes]], object]) -> bytes:
    out = io.BytesIO()
    fill(out)
    return out.getvalue()


def whole(tree: CallNode) -> bytes:
    """What the writer of the whole ``SavedProfile`` writes: the reference bytes."""
    return bytes_of(saved_writer(from_tree(tree, ProfileMeta()), "folded"))


def trees() -> dict[str, CallNode]:
    """The varied profile's tree as a snapshot holds it, as ``record``'s last
    tree, read back from folded text, derived (frames dropped, idle dropped)."""
    p = varied()
    tree = p.tree()
    loaded = folded_tree(parse_lines(whole(tree).decode())[0])
    return {
        "live": tree,
        "last": p.tree(last=True),
        "loaded": loaded,
        "kept": keep_frames(tree, lambda node: not node.kernel),
        "no-idle": drop_idle(tree)[0],
    }


@pytest.mark.parametrize("name", ["live", "last", "loaded", "kept", "no-idle"])
def test_streamed_folded_is_the_whole_profiles_bytes_and_the_tree_walk(name: str) -> None:
    tree = trees()[name]
    streamed = bytes_of(tree_folded_writer(tree))
    assert streamed == whole(tree)
    lines = streamed.decode().splitlines()
    assert len(lines) > 3 * saved.CHUNK and streamed.endswith(b"\n")
    assert sorted(lines) == sorted(folded_lines(tree))
    groups = [line.split(";")[0] for line in lines]
    runs = [group for n, group in enumerate(groups) if n == 0 or groups[n - 1] != group]
    assert runs == [frame_label(g.label, False, False) for g in tree.children], "hottest first"


def test_the_streamed_writer_writes_afresh_each_call() -> None:
    fill = tree_folded_writer(varied().tree())
    assert bytes_of(fill) == bytes_of(fill) != b""


def test_write_folded_counts_the_lines_it_streamed(tmp_path: Path) -> None:
    tree = varied().tree()
    target = tmp_path / "w.folded"
    assert write_folded(tree, target) == len(list(folded_lines(tree)))
    assert target.read_bytes() == whole(tree)


def timed_snapshot() -> Snapshot:
    """A time probe's last snapshot: counts are nanoseconds, ``events_tree`` the calls."""
    p, calls = varied(), Profile()
    calls.add("app", [user("main", 10), user("run")], 1)
    return Snapshot(
        seq=1, phase=Phase.SAMPLING, stats=CollectionStats(probe="offcpu"), tree=p.tree(),
        weight_unit="ns", probe_events=1, events_tree=calls.tree(),
    )  # fmt: skip


def test_record_writes_folded_from_the_tree_without_a_saved_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = timed_snapshot()
    meta = snapshot_meta(snap, frequency_hz=99, start_ns=1, end_ns=2, version="test")
    expected = bytes_of(saved_writer(from_tree(snap.tree, meta, snap.events_tree), "folded"))

    def refused(*_: object) -> None:
        raise AssertionError("folded output made the whole SavedProfile")

    monkeypatch.setattr(profile_io, "from_tree", refused)
    save_recording(snap, meta, tmp_path / "r.folded", None)
    assert (tmp_path / "r.folded").read_bytes() == expected
