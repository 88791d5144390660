"""Unit tests of the time modes: Profile.remove / halve, TimedProfile, Commands."""

from __future__ import annotations

from bpftop.symbols.frame import Frame
from bpftop.tui.model.derived import hot_from_tree
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.timemode import Commands, TimedProfile, TimeMode, TimeSetting


def u(name: str) -> Frame:
    return Frame(name, "/bin/app", 0)


A = (u("main"), u("a"))
B = (u("main"), u("b"), u("b"))


def same(p: Profile, q: Profile) -> bool:
    return p.tree() == q.tree() and p.hot_functions() == q.hot_functions()


def test_remove_takes_back_exactly_what_was_added() -> None:
    p = Profile()
    p.add("app", A, 3)
    before = Profile()
    before.add("app", A, 3)
    p.add("app", B, 2)
    p.remove("app", B, 2)
    assert same(p, before)
    assert p.hot_functions() == hot_from_tree(p.tree())
    p.remove("app", A, 1)
    assert p.total_samples == 2 and p.hot_functions()[0].self_count == 2
    p.remove("app", (u("nope"),), 1)  # never added: ignored
    p.remove("app", A, 99)  # more than there is: only what there is
    assert p.total_samples == 0 and p.tree().children == () and p.hot_functions() == ()


def test_halve_keeps_tree_and_functions_consistent() -> None:
    p = Profile()
    p.add("app", A, 7)
    p.add("app", B, 4)
    p.add("app", (u("main"),), 1)
    p.halve()
    tree = p.tree()
    assert tree.total_count == 3 + 2 + 0
    assert p.hot_functions() == hot_from_tree(tree)
    rec = {f.label: f for f in p.hot_functions()}["b"]
    assert (rec.self_count, rec.total_count) == (2, 2)
    p.halve()
    p.halve()
    assert p.total_samples == 0 and p.hot_functions() == ()


def test_cumulative_mode_is_the_plain_profile() -> None:
    t = TimedProfile()
    t.add("app", A, 2)
    t.end_tick(1.0)
    assert t.current is t.cumulative and t.current.total_samples == 2
    t.add("app", A, 0)
    assert t.current.total_samples == 2


def test_window_keeps_only_the_last_seconds() -> None:
    t = TimedProfile(TimeSetting(TimeMode.WINDOW, window_s=2.0))
    for n in range(1, 5):  # tick n adds n samples
        t.add("app", A, n)
        t.end_tick(1.0)
    assert t.current.total_samples == 3 + 4
    assert t.cumulative.total_samples == 10
    expected = Profile()
    expected.add("app", A, 7)
    assert same(t.current, expected)


def test_switching_to_window_starts_from_the_kept_ticks() -> None:
    t = TimedProfile(TimeSetting(window_s=2.0))
    for n in range(1, 5):
        t.add("app", A if n % 2 else B, n)
        t.end_tick(1.0)
    t.set_mode(TimeSetting(TimeMode.WINDOW, window_s=2.0))
    assert t.current.total_samples == 3 + 4
    t.set_mode(t.setting.next())  # decay
    assert t.setting.mode is TimeMode.DECAY and t.current.total_samples == 7
    t.set_mode(t.setting.next())  # back to cumulative
    assert t.current is t.cumulative and t.current.total_samples == 10


def test_decay_halves_every_half_life() -> None:
    t = TimedProfile(TimeSetting(TimeMode.DECAY, half_life_s=2.0))
    t.add("app", A, 40)
    t.end_tick(1.0)
    assert t.current.total_samples == 40
    t.end_tick(1.0)
    assert t.current.total_samples == 20
    t.end_tick(4.0)
    assert t.current.total_samples == 5 and t.cumulative.total_samples == 40


def test_reset_keeps_the_mode() -> None:
    t = TimedProfile(TimeSetting(TimeMode.WINDOW))
    t.add("app", A, 5)
    t.end_tick(1.0)
    t.reset()
    assert t.current.total_samples == 0 and t.cumulative.total_samples == 0
    assert t.setting.mode is TimeMode.WINDOW
    t.add("app", A, 1)
    assert t.current.total_samples == 1


def test_labels_and_cycle() -> None:
    s = TimeSetting()
    assert s.label == "cumulative"
    assert s.next().label == "last 30s" and s.next().next().label == "decay ½ every 10s"
    assert s.next().next().next() == s


def test_commands_are_applied_once_on_the_collector_side() -> None:
    t = TimedProfile()
    t.add("app", A, 3)
    c = Commands()
    assert not c.apply(t)
    c.request_mode(TimeSetting(TimeMode.WINDOW))
    c.request_reset()
    assert c.apply(t)
    assert t.setting.mode is TimeMode.WINDOW and t.current.total_samples == 0
    assert not c.apply(t)


def test_select_thread_shows_one_threads_stacks() -> None:
    t = TimedProfile(TimeSetting(window_s=2.0))
    t.add("app", A, 3, tid=1)
    t.add("app", B, 2, tid=2)
    t.end_tick(1.0)
    t.select_thread(2)
    assert t.current.total_samples == 2 and t.label == "cumulative, thread 2"
    t.add("app", A, 5, tid=1)
    t.add("app", B, 1, tid=2)
    t.end_tick(1.0)
    assert t.current.total_samples == 3 and t.cumulative.total_samples == 11
    assert [(s.tid, s.name, s.samples) for s in t.thread_shares({1: "main"})] == [
        (1, "main", 8), (2, "", 3)]  # fmt: skip
    t.set_mode(TimeSetting(TimeMode.WINDOW, window_s=1.0))
    t.add("app", B, 4, tid=2)
    t.end_tick(1.0)
    assert t.current.total_samples == 4
    t.select_thread(None)
    assert t.current.total_samples == 4 and t.label == "last 1s"
    c = Commands()
    c.request_thread(1)
    assert c.apply(t) and t.thread == 1
    t.reset()
    assert t.thread == 1 and t.thread_samples == {} and t.current.total_samples == 0


def test_fast_path_survives_a_stack_removed_and_added_again() -> None:
    p = Profile()
    p.add("app", B, 2)
    p.add("app", A, 1)
    p.remove("app", B, 2)  # b's nodes die
    p.add("app", B, 5)  # same tuple: must not count into the dead nodes
    expected = Profile()
    expected.add("app", A, 1)
    expected.add("app", list(B), 5)
    assert same(p, expected)
    p.add("app", B, 1)  # fast path again, on the new nodes
    assert p.total_samples == 7 and p.hot_functions() == hot_from_tree(p.tree())


def labels(p: Profile) -> set[str]:
    found, stack = set(), [p.tree()]
    while stack:
        node = stack.pop()
        found.add(node.label)
        stack.extend(node.children)
    return found


def test_native_frames_project_python_stacks_from_the_kept_ticks_on() -> None:
    """A stack with Python frames comes with its native frames; native frames
    only shows those (a stack without Python frames as it is), from the kept
    ticks on, on a store of its own; off again, the merged stacks as before."""
    py = (u("main"), Frame("run (/w/app.py:3)", "/w/app.py", 0))
    native = (u("main"), Frame("_PyEval_EvalFrameDefault", "/usr/bin/python3.11", 0))
    t = TimedProfile(TimeSetting(TimeMode.WINDOW, window_s=2.0))
    t.add("app", py, 2, native=native)
    t.add("app", A, 1)
    t.end_tick(1.0)
    merged_store = t.current.store
    c = Commands()
    c.request_native(True)
    assert c.apply(t) and t.native and t.label == "last 2s, native frames"
    assert "_PyEval_EvalFrameDefault" in labels(t.current)
    assert "run (/w/app.py:3)" not in labels(t.current) and "a" in labels(t.current)
    assert t.current.store is not merged_store and t.current.total_samples == 3
    for _ in range(2):  # the first tick leaves the window: taken back as it was added
        t.add("app", py, 5, native=native)
        t.end_tick(1.0)
    assert t.current.total_samples == 10 and "a" not in labels(t.current)
    t.select_native(False)
    assert "run (/w/app.py:3)" in labels(t.current) and t.current.total_samples == 10
    assert t.cumulative.total_samples == 13
    assert "_PyEval_EvalFrameDefault" not in labels(t.cumulative)
