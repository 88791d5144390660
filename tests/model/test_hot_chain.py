"""``hot_chain``: how far the hot path opens (own time, share of the total,
share of the parent)."""

from __future__ import annotations

from bpftop.symbols.frame import Frame
from bpftop.tui.model.node_paths import hot_chain
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode


def tree(stacks: list[tuple[list[str], int]]) -> CallNode:
    profile = Profile()
    for names, count in stacks:
        profile.add("p", [Frame(n, "/bin/p", 0, kernel=n.startswith("k_")) for n in names], count)
    return profile.tree()


def labels(root: CallNode) -> list[str]:
    return [key[0] for key in hot_chain(root, root.total_count)]


def test_stops_where_own_time_outweighs_the_hottest_child() -> None:
    root = tree([(["main", "hash", "mix"], 600), (["main", "hash", "mix", "k_irq", "k_sched"], 30)])
    assert labels(root) == ["p", "main", "hash", "mix"]  # 30 (5%) is under mix's own 600


def test_never_opens_a_child_under_one_percent_of_the_total() -> None:
    thin = tree([(["main", "work", "leaf"], 5), (["main", "other"], 995)])
    work = thin.children[0].children[0].children[1]
    assert work.label == "work" and work.self_count == 0
    assert hot_chain(work, thin.total_count) == ()  # leaf: 0.5% of the total
    assert hot_chain(work, thin.total_count, min_pct=0.1)[0][0] == "leaf"  # the setting


def test_never_opens_a_child_under_a_tenth_of_its_parent() -> None:
    # main has no own time; its hottest child is 9 of 100 (9%: over 1% of the total,
    # under a tenth of main)
    spread = [(["main", f"f{i:02}"], 9) for i in range(11)] + [(["main"], 0)]
    root = tree(spread)
    assert labels(root) == ["p", "main"]
    root = tree([(["main", "a"], 12), *[(["main", f"g{i}"], 8) for i in range(11)]])
    assert labels(root) == ["p", "main", "a"]  # 12 of 100: over a tenth


def test_goes_down_to_the_leaf_of_a_real_chain() -> None:
    root = tree(
        [(["main", "work", "leaf_a"], 6), (["main", "work", "leaf_b"], 3), (["main", "idle"], 1)]
    )
    assert labels(root) == ["p", "main", "work", "leaf_a"]


def test_an_empty_tree_has_no_chain() -> None:
    assert hot_chain(CallNode("all"), 0) == ()
