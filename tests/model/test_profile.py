"""Unit tests of the call-tree / hot-function model."""

from __future__ import annotations

import numpy as np

from bpftop.symbols.frame import Frame
from bpftop.tui.model.array_tree import array_tree
from bpftop.tui.model.profile import MAX_PENDING, MAX_UNPLACED, Profile
from bpftop.tui.model.snapshot import CallNode, HotFunction
from tests.formats.folded_oracle import folded_lines


def u(name: str, module: str = "/bin/app") -> Frame:
    return Frame(name, module, 0)


def k(name: str) -> Frame:
    return Frame(name, "[kernel]", 0, kernel=True)


def child(node: CallNode, label: str) -> CallNode:
    matches = [c for c in node.children if c.label == label]
    assert len(matches) == 1, (label, [c.label for c in node.children])
    return matches[0]


def walk(node: CallNode, *labels: str) -> CallNode:
    for label in labels:
        node = child(node, label)
    return node


def hot_by_label(profile: Profile) -> dict[str, HotFunction]:
    return {fn.label: fn for fn in profile.hot_functions()}


def test_self_and_total_counts() -> None:
    p = Profile()
    p.add("app", [u("main"), u("a")], 3)
    p.add("app", [u("main"), u("b")], 2)
    p.add("app", [u("main")], 1)
    tree = p.tree()
    assert p.total_samples == 6
    assert tree.label == "all" and tree.total_count == 6 and tree.self_count == 0
    main = walk(tree, "app", "main")
    assert (main.self_count, main.total_count) == (1, 6)
    assert (child(main, "a").self_count, child(main, "a").total_count) == (3, 3)
    hot = hot_by_label(p)
    assert (hot["main"].self_count, hot["main"].total_count) == (1, 6)
    assert (hot["b"].self_count, hot["b"].total_count) == (2, 2)


def test_recursion_counted_once_in_total() -> None:
    p = Profile()
    p.add("app", [u("main"), u("rec"), u("rec"), u("rec"), u("leaf")], 5)
    p.add("app", [u("main"), u("rec")], 2)
    hot = hot_by_label(p)
    assert hot["rec"].total_count == 7
    assert hot["rec"].self_count == 2
    assert hot["main"].total_count == 7
    # the tree keeps the recursion as nested nodes
    inner = walk(p.tree(), "app", "main", "rec", "rec", "rec")
    assert inner.total_count == 5


def test_same_function_in_different_modules_or_kernel_are_distinct() -> None:
    p = Profile()
    p.add("app", [u("f", "/bin/a"), u("f", "/bin/b"), k("f")], 1)
    hot = p.hot_functions()
    assert {(h.label, h.module, h.kernel) for h in hot} == {
        ("f", "/bin/a", False),
        ("f", "/bin/b", False),
        ("f", "[kernel]", True),
    }


def test_children_sorted_by_total_then_label() -> None:
    p = Profile()
    p.add("app", [u("main"), u("b")], 2)
    p.add("app", [u("main"), u("c")], 5)
    p.add("app", [u("main"), u("a")], 2)
    main = walk(p.tree(), "app", "main")
    assert [c.label for c in main.children] == ["c", "a", "b"]


def test_hot_functions_sorted_by_self_then_total_then_label() -> None:
    p = Profile()
    p.add("app", [u("x"), u("b")], 4)
    p.add("app", [u("y"), u("a")], 4)
    p.add("app", [u("z")], 4)
    p.add("app", [u("z"), u("q")], 1)
    labels = [h.label for h in p.hot_functions()]
    assert labels[:3] == ["z", "a", "b"]  # z: self 4 total 5 beats a/b: self 4 total 4
    assert labels[3:] == ["q", "x", "y"]
    assert [h.label for h in p.hot_functions(limit=2)] == ["z", "a"]


def test_processes_are_top_level_and_keys_identify_nodes() -> None:
    p = Profile()
    p.add("one", [u("main")], 1)
    p.add("two", [u("main")], 3)
    tree = p.tree()
    assert [c.label for c in tree.children] == ["two", "one"]
    assert tree.children[0].key == ("two", "", False)
    assert tree.children[0].children[0].key == ("main", "/bin/app", False)


def test_kernel_frames_follow_user_frames() -> None:
    p = Profile()
    p.add("app", [u("main"), u("write"), k("do_syscall_64"), k("vfs_write")], 1)
    leaf = walk(p.tree(), "app", "main", "write", "do_syscall_64", "vfs_write")
    assert leaf.kernel and leaf.self_count == 1


def test_empty_stack_counts_on_process_node() -> None:
    p = Profile()
    p.add("app", [], 2)
    app = walk(p.tree(), "app")
    assert (app.self_count, app.total_count) == (2, 2)
    assert p.hot_functions() == ()


def test_reset_forgets_everything() -> None:
    p = Profile()
    p.add("app", [u("main")], 3)
    p.reset()
    assert p.total_samples == 0
    assert p.tree() == CallNode("all")
    assert p.hot_functions() == ()


def test_tree_is_an_immutable_snapshot_cached_until_counts_change() -> None:
    p = Profile()
    p.add("app", [u("main"), u("a")], 1)
    p.add("app", [u("main"), u("b")], 1)
    first = p.tree()
    p.add("app", [u("main"), u("a")], 1)
    p.add("app", [u("main"), u("c")], 4)  # a new node under a node the snapshot has
    second = p.tree()
    assert [c.label for c in walk(first, "app", "main").children] == ["a", "b"]
    assert walk(first, "app", "main", "a").total_count == 1
    assert [c.label for c in walk(second, "app", "main").children] == ["c", "a", "b"]
    assert walk(second, "app", "main", "a").total_count == 2
    assert p.tree() is second, "nothing changed: the same tree"
    p.reset()
    assert walk(first, "app", "main").total_count == 2, "a reset leaves old snapshots alone"


def test_total_is_self_plus_children() -> None:
    p = Profile()
    p.add("app", [u("m"), u("a"), u("b")], 3)
    p.add("app", [u("m"), u("a")], 2)
    p.add("app", [u("m"), u("c")], 1)

    def check(node: CallNode) -> None:
        assert node.total_count == node.self_count + sum(c.total_count for c in node.children)
        for c in node.children:
            check(c)

    check(p.tree())


def test_snapshots_survive_the_store_growing_and_removals() -> None:
    p = Profile()
    frames = [(u(f"f{i}"), u(f"g{i % 100}"), u(f"h{i}")) for i in range(3400)]
    for stack in frames:
        p.add("app", stack, 1)
    before = p.tree()
    lines = sorted(folded_lines(before))
    assert before.total_count == 3400 and len(lines) == 3400
    for i in range(3400, 9000):  # many new nodes: the store's arrays grow
        p.add("app", (u(f"f{i}"), u("x")), 1)
    for stack in frames[:100]:
        p.remove("app", stack, 1)
    after = p.tree()
    assert after.total_count == 3400 + 5600 - 100
    assert ("f0", "/bin/app", False) not in {c.key for c in after.children[0].children}
    assert sorted(folded_lines(before)) == lines, "the old snapshot did not change"


def test_hot_functions_limited_then_all_and_ties_at_the_cut() -> None:
    p = Profile()
    for i in range(30):
        p.add("app", [u("main"), u(f"f{i:02d}")], 1 + i // 10)  # three tiers of ten
    top = p.hot_functions(limit=12)
    assert [h.label for h in top] == ["f20", "f21", *[f"f{i}" for i in range(22, 30)], "f10", "f11"]
    everything = p.hot_functions()
    assert len(everything) == 31 and everything[:12] == top, "a longer ask is not cut short"
    assert [h.label for h in everything[-3:]] == ["f08", "f09", "main"]  # main: self 0
    p.add("app", [u("main"), u("f00")], 50)
    assert [h.label for h in p.hot_functions(limit=1)] == ["f00"], "new counts, new ranking"


def test_wide_node_children_ordered_and_cut_by_min_total() -> None:
    p = Profile()
    for i in range(40):  # more children than the item-by-item path handles
        p.add("app", [u("main"), u(f"c{i:02d}")], 1 + i % 7)
    main = walk(p.tree(), "app", "main")
    order = [(c.total_count, c.label) for c in main.children]
    assert order == sorted(order, key=lambda t: (-t[0], t[1])) and len(order) == 40
    p.add("app", [u("other")], 1)  # a new snapshot, its children not made yet
    wide = walk(p.tree(), "app", "main")
    assert [c.label for c in wide.children_with(6)] == [
        label for total, label in order if total >= 6
    ]


def test_counts_nobody_reads_are_applied_before_they_pile_up() -> None:
    """In window mode the cumulative profile is added to every tick and never
    read: its buffered counts must stay bounded (they grew 20 MiB per 5 min)."""
    p = Profile()
    stacks = [(u("main"), u(f"f{i}")) for i in range(100)]
    for _ in range(MAX_PENDING // 100 * 3):
        for stack in stacks:
            p.add("app", stack, 1)
    assert len(p._pending) < MAX_PENDING
    assert p.total_samples == MAX_PENDING // 100 * 300
    assert walk(p.tree(), "app", "main", "f7").total_count == MAX_PENDING // 100 * 3


def test_stacks_placed_together_make_the_tree_they_make_one_by_one() -> None:
    # New stacks are inserted into the store as one batch at the next read: shared
    # prefixes, recursion (a function counted once per stack) and a stack that
    # arrives twice under two tuples must come out as if read after every add.
    import random

    rng = random.Random(5)
    names = [u(f"f{i}") for i in range(12)] + [u("g", "/lib/libg.so")]
    stacks = [
        tuple([u("main")] + [rng.choice(names) for _ in range(rng.randint(0, 9))])
        for _ in range(300)
    ]
    stacks += [tuple(s) for s in stacks[:20]]  # equal stacks, other tuples
    together, alone = Profile(), Profile()
    for n, stack in enumerate(stacks):
        together.add(f"app{n % 2}", stack, 1 + n % 3)
        alone.add(f"app{n % 2}", stack, 1 + n % 3)
        alone.tree()
    assert sorted(folded_lines(together.tree())) == sorted(folded_lines(alone.tree()))
    assert together.hot_functions() == alone.hot_functions()
    together.remove("app0", stacks[0], 1_000)  # at most what it has: all of its samples
    alone.remove("app0", stacks[0], 1_000)
    assert sorted(folded_lines(together.tree())) == sorted(folded_lines(alone.tree()))
    assert together.hot_functions() == alone.hot_functions()


def test_new_stacks_nobody_reads_are_placed_in_bounded_batches() -> None:
    # record reads the profile once, at the end: the new stacks waiting to be
    # placed (and the temporary arrays of their batch) must not pile up till then.
    p = Profile()
    for i in range(MAX_UNPLACED * 2 + 5):
        p.add("app", (u("main"), u(f"f{i % 50}"), u(f"g{i}")), 1)
    assert len(p._unplaced) < MAX_UNPLACED
    assert p.total_samples == MAX_UNPLACED * 2 + 5
    assert walk(p.tree(), "app", "main", "f7").total_count == len(
        range(7, MAX_UNPLACED * 2 + 5, 50)
    )


def test_a_last_tree_shares_the_counts_and_any_other_copies_them() -> None:
    """A record's final tree (``last``) shares the profile's count arrays (no
    27 MB copy at 1.7 M nodes); a live tree is a copy later samples leave alone."""
    frames = [Frame("main", "app", 0x10), Frame("work", "app", 0x20)]
    live = Profile()
    live.add("app", frames, 3)
    tree = live.tree()
    live.add("app", frames, 2)
    assert tree.total_count == 3 and live.tree().total_count == 5
    last = Profile()
    last.add("app", frames, 3)
    shared = array_tree(last.tree(last=True))
    assert np.shares_memory(shared.total, last._total) and shared.total[0] == 3
    assert not np.shares_memory(array_tree(tree).total, live._total)
