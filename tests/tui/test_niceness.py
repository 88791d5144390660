"""Start-up threads lower their own priority, and only their own (Linux: per thread);
the compile gets its priority back once someone waits for it."""

from __future__ import annotations

import os
import threading
import time

from bpftop.tui.collect.early import BackgroundLoad
from bpftop.tui.collect.niceness import BACKGROUND_NICE, Yielding, lower_priority


def _nice(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_a_thread_lowers_only_itself_and_its_own_threads() -> None:
    main = _nice(threading.get_native_id())
    seen: dict[str, int | None] = {}

    def child() -> None:
        seen["child"] = _nice(threading.get_native_id())

    def background() -> None:
        seen["returned"] = lower_priority()
        seen["background"] = _nice(threading.get_native_id())
        started = threading.Thread(target=child)  # inherits the lowered value
        started.start()
        started.join()

    thread = threading.Thread(target=background)
    thread.start()
    thread.join()
    want = min(19, main + BACKGROUND_NICE)
    assert seen == {"returned": want, "background": want, "child": want}
    assert _nice(threading.get_native_id()) == main, (
        "the calling process's other threads keep theirs"
    )


def test_lowering_is_capped_at_19() -> None:
    result: list[int | None] = []
    thread = threading.Thread(target=lambda: result.extend([lower_priority(), lower_priority(30)]))
    thread.start()
    thread.join()
    assert result[1] == 19


def test_the_compile_runs_lowered_until_someone_waits_for_it() -> None:
    main = _nice(threading.get_native_id())
    release, seen, tids = threading.Event(), [], []

    def load() -> None:
        tids.append(threading.get_native_id())
        seen.append(_nice(tids[0]))
        release.wait(10)
        seen.append(_nice(tids[0]))

    loading = BackgroundLoad(load, lambda: None, lambda: None)
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:
        time.sleep(0.005)
    waiter = threading.Thread(target=loading.wait)
    waiter.start()
    while _nice(tids[0]) != main and time.monotonic() < deadline:
        time.sleep(0.005)
    release.set()
    waiter.join(10)
    assert seen == [min(19, main + BACKGROUND_NICE), main], "lowered, then restored by wait()"
    assert loading.succeeded


def test_a_thread_someone_already_waits_for_is_not_lowered() -> None:
    main = _nice(threading.get_native_id())
    yielding, seen = Yielding(), []
    yielding.hurry()  # e.g. a held command waits for the unwind builder before it starts

    def run() -> None:
        with yielding:
            seen.append(_nice(threading.get_native_id()))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [main]


def test_a_thread_gets_its_priority_back_after_at_most_s_without_a_waiter() -> None:
    # The compile and the table builder yield for the start-up only: lowered to
    # the end, BPF was attached 25 s after launch on a busy VM (bench.ready).
    main = _nice(threading.get_native_id())
    yielding, seen, done = Yielding(at_most_s=0.2), [], threading.Event()

    def run() -> None:
        with yielding:
            tid = threading.get_native_id()
            seen.append(_nice(tid))
            deadline = time.monotonic() + 10
            while _nice(tid) != main and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(_nice(tid))
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(15)
    assert done.is_set()
    assert seen == [min(19, main + BACKGROUND_NICE), main], "lowered, then restored by the timer"
