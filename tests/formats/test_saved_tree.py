"""The fast tree builders equal the tree ``Profile.add`` makes of the same stacks."""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st

from bpftop.tui.formats.folded_tree import folded_tree, parse_lines
from bpftop.tui.formats.saved import (
    ProfileMeta,
    SavedFrame,
    SavedProfile,
    SavedStack,
    from_tree,
    to_profile,
)
from bpftop.tui.formats.saved_folded import from_folded
from bpftop.tui.formats.saved_tree import build_tree
from bpftop.tui.model.callers_tree import callers_tree
from bpftop.tui.model.derived import hot_from_tree
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.store import ROOT, LiveNode
from tests.formats.test_saved import META, sample_profile
from tests.model import oracle_views

# Labels that are prefixes of each other and sort around ';' (':' < ';' < '<').
LABELS = ["a", "ab", "a:b", "a<", "b", "do_sys_[k]", "x_[k]", "_[k]", "main", "a b", "app"]
GROUPS = ["app", "a", "x_[k]", "_[k]", "main"]
Frame_ = TypeVar("Frame_", str, SavedFrame)
# One description per (name, module, kernel) key, as every importer writes them.
FRAMES = [
    SavedFrame("main", "app"),
    SavedFrame("run", "app", file="run.c", line=12),
    SavedFrame("run", "libc.so.6"),
    SavedFrame("run", "", kernel=True),
    SavedFrame("hash", "app", file="hash.c", inlined=True),
    SavedFrame("app+0x10", "app", unresolved=True),
    SavedFrame("app", ""),
]


def _plain(node: CallNode) -> CallNode:
    """The same tree as plain nodes (for the node-walk oracle)."""
    kids = tuple(_plain(child) for child in node.children)
    return CallNode(node.label, node.module, node.kernel, node.self_count, node.total_count,
                    kids, node.source, node.inlined, node.unresolved)  # fmt: skip


def _assert_same_views(built: CallNode, expected: CallNode) -> None:
    """Equal trees, and equal array views of them (they read FIRST_OF_FUNCTION:
    a recursive function's samples count once) as of ``Profile``'s own tree."""
    for tree in (built, expected):
        assert isinstance(tree, LiveNode) and tree.index == ROOT
    assert built == expected
    hot = hot_from_tree(built)
    assert hot == hot_from_tree(expected) == oracle_views.hot_from_tree(_plain(expected))
    for function in hot[:3]:
        key = (function.label, function.module, function.kernel)
        assert callers_tree(built, key) == callers_tree(expected, key)


def test_build_tree_equals_profile_tree_with_modules_sources_and_kinds() -> None:
    saved = from_tree(sample_profile().tree(), META)
    _assert_same_views(build_tree(saved), sample_profile().tree())


def test_empty_profiles_give_the_root_alone() -> None:
    assert build_tree(SavedProfile(ProfileMeta(), ())) == CallNode("all")
    assert folded_tree(parse_lines("\n")[0]) == CallNode("all")


def stacks_of(frames: list[Frame_]) -> st.SearchStrategy[list[tuple[str, list[Frame_], int]]]:
    """Up to 25 stacks: a group, up to 7 of ``frames`` (repeats: recursion), a count."""
    return st.lists(
        st.tuples(
            st.sampled_from(GROUPS),
            st.lists(st.sampled_from(frames), max_size=7),
            st.integers(min_value=0, max_value=9),
        ),
        max_size=25,
    )


@settings(max_examples=200, deadline=None)
@given(stacks_of([*FRAMES, *map(replace, FRAMES)]))  # equal frames as other objects too
def test_build_tree_equals_profile_tree(stacks: list[tuple[str, list[SavedFrame], int]]) -> None:
    saved = SavedProfile(META, tuple(SavedStack(g, tuple(f), c) for g, f, c in stacks))
    _assert_same_views(build_tree(saved), to_profile(saved).tree())


@settings(max_examples=200, deadline=None)
@given(stacks_of(LABELS))
def test_folded_tree_equals_profile_tree(stacks: list[tuple[str, list[str], int]]) -> None:
    text = "".join(f"{';'.join([group, *names])} {count}\n" for group, names, count in stacks)
    text += "no count here\n\n"
    found, skipped = parse_lines(text)
    saved = from_folded(text)
    assert skipped == saved.skipped == 1
    expected = to_profile(saved).tree()
    _assert_same_views(folded_tree(found), expected)
    _assert_same_views(build_tree(saved), expected)
