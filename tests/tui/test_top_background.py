"""The Top table's grouping by symbol (``hot_by_symbol``) of a large tree with
inline frames is made on the derive worker, not on the app thread; a small tree
is grouped at once. Either way the table is the one ``hot_by_symbol`` makes."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from bpftop.symbols.frame import Frame
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.model import viewstate
from bpftop.tui.model.array_tree import array_tree
from bpftop.tui.model.derived import hot_by_symbol, hot_from_tree
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Phase, Snapshot
from tests.tui.demo_fixture import demo_snapshot
from tests.tui.fake_source import FakeSource

from .helpers import PROCESS, SIZE


def large_snapshot() -> Snapshot:
    """More nodes than the app thread groups itself; every 7th function inline."""
    rng = random.Random(5)
    funcs = [Frame(f"fn_{i}", "/opt/app", 0, inlined=i % 7 == 0) for i in range(2_000)]
    profile = Profile()
    for _ in range(6_000):
        stack = [funcs[rng.randrange(len(funcs))] for _ in range(rng.randint(4, 24))]
        profile.add("app", stack, rng.randint(1, 9))
    tree = profile.tree()
    assert array_tree(tree).size > viewstate.SYNC_GROUPING_NODES
    stats = CollectionStats(probe="profile:hz:99", total_samples=profile.total_samples)
    hot = profile.hot_functions(200)
    return Snapshot(seq=1, phase=Phase.SAMPLING, stats=stats, process=PROCESS, tree=tree, hot=hot)


def record_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads ``hot_by_symbol`` runs on, from now on."""
    names: list[str] = []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        names.append(threading.current_thread().name)
        return hot_by_symbol(*args, **kwargs)

    monkeypatch.setattr(viewstate, "hot_by_symbol", recorded)
    return names


async def shown_table(snap: Snapshot) -> list[tuple[str, int, int]]:
    """The Top view's functions once the app has shown ``snap`` (waiting for the worker)."""
    app = BpftopApp(FakeSource([snap]), 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("1")
        for _ in range(200):
            if app.views.top_view.functions:
                break
            await pilot.pause(0.05)
        return [(f.label, f.self_count, f.total_count) for f in app.views.top_view.functions]


async def test_a_large_table_is_grouped_by_symbol_off_the_app_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snap = large_snapshot()
    threads = record_threads(monkeypatch)
    shown = await shown_table(snap)
    assert threads and all(name.startswith("bpftop-derive") for name in threads), threads
    expected = [(f.label, f.self_count, f.total_count) for f in hot_by_symbol(snap.tree, 500)]
    assert shown == expected
    as_rows = [(f.label, f.self_count, f.total_count) for f in hot_from_tree(snap.tree, 500)]
    assert shown != as_rows  # grouping inline frames into their functions changed the table


async def test_a_small_table_is_grouped_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = record_threads(monkeypatch)
    snap = demo_snapshot()
    shown = await shown_table(snap)
    assert threads and set(threads) == {threading.main_thread().name}
    assert shown == [(f.label, f.self_count, f.total_count) for f in hot_by_symbol(snap.tree, 500)]
