"""The fast tree builders equal the tree ``Profile.add`` makes of the same stacks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bpftop.tui.model.folded_tree import folded_tree, parse_lines
from bpftop.tui.model.saved import from_tree, to_profile
from bpftop.tui.model.saved_folded import from_folded
from bpftop.tui.model.saved_tree import build_tree
from tests.model.test_saved import META, sample_profile

# Labels that are prefixes of each other and sort around ';' (':' < ';' < '<').
LABELS = ["a", "ab", "a:b", "a<", "b", "do_sys_[k]", "x_[k]", "_[k]", "main", "a b"]


def test_build_tree_equals_profile_tree_with_modules_sources_and_kinds() -> None:
    saved = from_tree(sample_profile().tree(), META)
    assert build_tree(saved) == sample_profile().tree()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(LABELS), min_size=1, max_size=6),
            st.integers(min_value=0, max_value=9),
        ),
        max_size=25,
    )
)
def test_folded_tree_equals_profile_tree(stacks: list[tuple[list[str], int]]) -> None:
    text = "".join(f"{';'.join(['app', *names])} {count}\n" for names, count in stacks)
    text += "no count here\n\n"
    found, skipped = parse_lines(text)
    saved = from_folded(text)
    assert skipped == saved.skipped == 1
    expected = to_profile(saved).tree()
    assert folded_tree(found) == expected
    assert build_tree(saved) == expected
