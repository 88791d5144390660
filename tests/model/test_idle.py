"""Idle Python samples (tui/model/idle.py): which frames are waits, the tree
without them, and the live view's default (hidden, counted, ``I`` shows)."""

from __future__ import annotations

from dataclasses import replace

from bpftop.symbols.frame import Frame
from bpftop.tui.model.idle import (
    busy_threads,
    drop_idle,
    idle_applies,
    is_idle_call,
    snapshot_without_idle,
)
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Phase, Snapshot
from bpftop.tui.model.timemode import TimedProfile
from bpftop.tui.model.viewstate import ViewState, derive_view
from tests.formats.folded_oracle import folded_lines

APP = "/srv/app.py"
THREADING = "/usr/lib/python3.11/threading.py"
QUEUE = "/usr/lib/python3.11/queue.py"
SELECTORS = "/usr/lib/python3.11/selectors.py"


def py(qualname: str, file: str, line: int) -> Frame:
    return Frame(f"{qualname} ({file}:{line})", file, 0)


def native(name: str) -> Frame:
    return Frame(name, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0)


def profile() -> Profile:
    """A pool thread idle in queue.get (7), an event loop idle in select (2),
    work blocking in a plain sleep (5), a sample without Python frames (1), and a
    stack whose innermost Python frame is busy code called from a wait's caller (4)."""
    p = Profile()
    worker = [py("<module>", APP, 1), py("worker", APP, 10), py("Queue.get", QUEUE, 171)]
    p.add("app", [*worker, py("Condition.wait", THREADING, 324), native("futex_wait")], 7)
    loop = [py("<module>", APP, 1), py("BaseSelectorEventLoop._run_once", APP, 40)]
    p.add("app", [*loop, py("EpollSelector.select", SELECTORS, 468), native("epoll_wait")], 2)
    p.add("app", [py("<module>", APP, 1), py("work", APP, 20), native("clock_nanosleep")], 5)
    p.add("app", [native("start_thread"), native("futex_wait")], 1)
    p.add("app", [*worker, py("Condition.notify", THREADING, 400)], 4)
    return p


def test_waiting_calls_are_pyspys_list() -> None:
    assert is_idle_call(f"Condition.wait ({THREADING}:324)", THREADING)
    assert is_idle_call(f"Condition.wait ({THREADING})", THREADING)  # grouped by function
    assert is_idle_call(f"EpollSelector.select ({SELECTORS}:468)", SELECTORS)
    assert is_idle_call("Poller.poll (/venv/zmq/sugar/poll.py:9)", "/venv/zmq/sugar/poll.py")
    assert not is_idle_call(f"Condition.notify ({THREADING}:400)", THREADING)
    assert not is_idle_call(f"wait ({APP}:3)", APP)  # a wait of the program's own
    assert not is_idle_call("wait", "/usr/lib/python3.11/threading.py")  # not a Python frame
    assert not is_idle_call("futex_wait", "")


def test_drop_idle_removes_stacks_whose_innermost_python_frame_waits() -> None:
    tree = profile().tree()
    kept, hidden = drop_idle(tree)
    assert hidden == 9 and kept.total_count == tree.total_count - 9 == 10
    lines = sorted(folded_lines(kept))
    assert not any("Condition.wait" in line or "select" in line for line in lines), lines
    assert any(line.endswith("Condition.notify (" + THREADING + ":400) 4") for line in lines)
    assert any("work" in line and line.endswith(" 5") for line in lines)
    assert "app;start_thread;futex_wait 1" in lines  # no Python frames: never idle


def test_drop_idle_of_a_tree_without_waits_is_the_tree() -> None:
    p = Profile()
    p.add("app", [py("<module>", APP, 1), py("work", APP, 20)], 3)
    tree = p.tree()
    assert drop_idle(tree) == (tree, 0)


def test_view_hides_idle_by_default_says_how_much_and_shows_it_on_toggle() -> None:
    tree = profile().tree()
    state = ViewState()
    state.idle_applies = idle_applies("offcpu:100")
    assert not state.cheap(tree)  # hiding the idle samples takes a derive
    hidden = state.derive(tree, ())
    assert hidden.idle_hidden == 9 and state.idle_hidden == 9
    assert hidden.tree.total_count == 10
    assert hidden.hot and all("Condition.wait" not in h.label for h in hidden.hot)
    assert state.toggle_idle()
    shown = state.derive(tree, ())
    assert shown.idle_hidden == 0 and state.idle_hidden == 0
    assert shown.tree.total_count == tree.total_count


def test_idle_is_dropped_before_other_frame_filters() -> None:
    """``P`` (Python frames only) on top: the idle stacks stay out."""
    tree = profile().tree()
    derived = derive_view(tree, (), "python", None)
    assert derived.idle_hidden == 9 and derived.tree.total_count == 10
    assert all("wait" not in line for line in folded_lines(derived.tree))


def test_threads_count_their_idle_samples_and_the_view_leaves_idle_threads_out() -> None:
    """The pool thread (7) waits in queue.get only: hidden; the worker (tid 2)
    has 4 idle and 5 busy samples: 5 shown; with idle shown, all as counted."""
    profile = TimedProfile()
    wait = (py("worker", APP, 10), py("Condition.wait", THREADING, 324), native("futex_wait"))
    work = (py("work", APP, 20), native("clock_nanosleep"))
    profile.add("app", wait, 7, tid=1)
    profile.add("app", wait, 4, tid=2)
    profile.add("app", work, 5, tid=2)
    profile.add("app", (native("main"),), 1, tid=3)
    shares = profile.thread_shares({1: "pool", 2: "worker", 3: "main"})
    assert [(t.tid, t.samples, t.idle) for t in shares] == [(2, 9, 4), (1, 7, 7), (3, 1, 0)]
    assert [(t.tid, t.samples) for t in busy_threads(shares)] == [(2, 5), (3, 1)]


def test_samples_of_running_threads_are_never_idle() -> None:
    """A CPU sample or a probe hit is a running thread (py-spy: the OS says it
    runs, so it is not idle): only offcpu profiles are filtered."""
    assert idle_applies("offcpu") and idle_applies("offcpu:1000")
    assert not any(map(idle_applies, ("profile:hz:99", "uprobe:c:malloc", "tracepoint:a:b")))
    tree = profile().tree()
    state = ViewState()
    state.idle_applies = idle_applies("profile:hz:99")
    assert state.keep_idle and state.derive(tree, ()).tree.total_count == tree.total_count
    stats = CollectionStats(probe="profile:hz:99", total_samples=tree.total_count)
    snap = Snapshot(seq=1, phase=Phase.SAMPLING, stats=stats, process=None, tree=tree, hot=())
    assert snapshot_without_idle(snap) == (snap, 0, 0.0)
    offcpu = replace(snap, stats=replace(stats, probe="offcpu"))
    kept, hidden, _ = snapshot_without_idle(offcpu)
    assert hidden == 9 and kept.tree.total_count == tree.total_count - 9
