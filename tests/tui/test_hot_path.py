"""The hot path in the live view: how far it opens, and fresh data never moving
the selection or the scroll position (Pilot, fake source)."""

from __future__ import annotations

import random

from bpftop.symbols.frame import Frame
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.model.node_paths import node_at
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CollectionStats, Phase, Snapshot
from tests.tui.fake_source import FakeSource

from .helpers import PROCESS, cursor_label, tree_labels

SIZE = (120, 36)
KERNEL_CHAIN = (
    "asm_sysvec_apic_timer_interrupt",
    "irqentry_exit_to_user_mode",
    "schedule",
    "__schedule",
    "finish_task_switch.isra.0",
)
REQ = ("_start", "__libc_start_main", "main", "serve", "handle_request")
SHAPE: tuple[tuple[tuple[str, ...], int], ...] = (
    ((*REQ, "hash_payload", "mix_round"), 420),
    ((*REQ, "hash_payload"), 64),
    ((*REQ, "parse_headers"), 300),
    ((*REQ, "render_response"), 120),
    ((*REQ, "log_line", "write"), 60),
    (("_start", "__libc_start_main", "main", "walk_tree", "visit"), 30),
    (("clone3", "start_thread", "compressor", "compress_block"), 6),
)
"""The demo workload's shape per tick (what bpftop shows of build/workloads/demo)."""


def frame(name: str) -> Frame:
    kernel = name in KERNEL_CHAIN
    return Frame(name, "[kernel]" if kernel else "/opt/demo/bin/demo", 0x10, kernel=kernel)


def tick_snapshots(ticks: int, seed: int = 7) -> list[Snapshot]:
    """Cumulative snapshots, each tick adding the shape with noise and, every few
    ticks, one sample of a kernel chain under the hottest leaf (0.1% or less)."""
    rng = random.Random(seed)
    profile = Profile()
    stacks = {names: tuple(frame(n) for n in names) for names, _ in SHAPE}
    kernel = (*stacks[SHAPE[0][0]], *(frame(n) for n in KERNEL_CHAIN))
    out = []
    for seq in range(1, ticks + 1):
        for names, count in SHAPE:
            profile.add("demo", stacks[names], max(1, round(count * rng.uniform(0.7, 1.3))))
        if seq % 3 == 0:
            profile.add("demo", kernel, 1)
        stats = CollectionStats(probe="profile:hz:99", total_samples=profile.total_samples)
        out.append(
            Snapshot(
                seq=seq,
                phase=Phase.SAMPLING,
                stats=stats,
                process=PROCESS,
                tree=profile.tree(),
                hot=profile.hot_functions(200),
            )
        )
    return out


async def test_no_key_pressed_the_selection_stays_on_the_hot_leaf() -> None:
    snapshots = tick_snapshots(40)
    source = FakeSource(snapshots[:1])
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        assert cursor_label(app) == "mix_round"
        placed, top = tree.cursor_path, tree.scroll_y
        for snapshot in snapshots[1:]:
            source.push(snapshot)
            await pilot.pause()
            assert tree.cursor_path == placed and tree.scroll_y == top
            assert not set(KERNEL_CHAIN) & set(tree_labels(app))  # never opened
        shown = app.views.tree_view.call_tree
        assert placed is not None
        selected = node_at(shown, placed)
        assert selected is not None and selected.total_count >= 0.05 * shown.total_count
        # e from the process row opens the same path, and no further
        await pilot.press("home", "e")
        assert cursor_label(app) == "mix_round"
        assert not set(KERNEL_CHAIN) & set(tree_labels(app))


async def test_fresh_data_never_moves_a_selection_the_user_made() -> None:
    snapshots = tick_snapshots(12)
    source = FakeSource(snapshots[:1])
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=(120, 12)) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        await pilot.press("home", "e", "down", "down")
        chosen, label = tree.cursor_path, cursor_label(app)
        for snapshot in snapshots[1:]:
            source.push(snapshot)
            await pilot.pause()
            assert tree.cursor_path == chosen and cursor_label(app) == label
        await pilot.press("1", "down", "down")  # Top: re-sorted every tick, same row chosen
        table = app.views.top_view
        key, top = table.selected_key(), table.scroll_y
        for snapshot in tick_snapshots(12, seed=11):
            source.push(snapshot)
            await pilot.pause()
            assert table.selected_key() == key and table.scroll_y == top
        await pilot.press("4", "down")  # Flame: the selected box stays
        flame = app.views.flame_view
        box = flame.selected
        for snapshot in tick_snapshots(6, seed=5):
            source.push(snapshot)
            await pilot.pause()
            assert flame.selected == box


async def test_a_selection_that_is_gone_is_placed_on_the_new_hot_path() -> None:
    source = FakeSource(tick_snapshots(2))
    app = BpftopApp(source, 1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert cursor_label(app) == "mix_round"
        profile = Profile()  # another probe's profile: other stacks altogether
        profile.add("demo", tuple(frame(n) for n in ("main", "alloc", "malloc")), 50)
        profile.add("demo", tuple(frame(n) for n in ("main", "free")), 5)
        stats = CollectionStats(probe="uprobe:c:malloc", total_samples=55)
        source.push(
            Snapshot(
                seq=3,
                phase=Phase.SAMPLING,
                stats=stats,
                process=PROCESS,
                tree=profile.tree(),
                hot=profile.hot_functions(20),
            )
        )
        await pilot.pause()
        assert cursor_label(app) == "malloc"
