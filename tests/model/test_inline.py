"""The Top table's two groupings of inline frames: by symbol (perf top's) and as rows."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bpftop.symbols.frame import Frame
from bpftop.tui.model.derived import has_inlined, hot_by_symbol, hot_from_tree
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.viewstate import ViewState, derive_view

M = "/bin/split_inline"


def u(name: str) -> Frame:
    return Frame(name, M, 0)


def i(name: str) -> Frame:
    """An inline frame as the symbolizer makes it: after (below) its function."""
    return Frame(name, M, 0, inlined=True)


def split_profile() -> Profile:
    """60/30/10 between three functions, each spending it in an inlined ``mix``."""
    p = Profile()
    for name, count in (("hot_a", 60), ("hot_b", 30), ("hot_c", 10)):
        p.add("split", [u("main"), u("run"), u(name), i("mix")], count)
    return p


def shares(hot: tuple[object, ...]) -> dict[str, tuple[int, int]]:
    return {f.label: (f.self_count, f.total_count) for f in hot}  # type: ignore[attr-defined]


def test_self_time_goes_to_the_function_the_inline_code_belongs_to() -> None:
    tree = split_profile().tree()
    by_symbol = shares(hot_by_symbol(tree))
    assert by_symbol == {
        "hot_a": (60, 60), "hot_b": (30, 30), "hot_c": (10, 10), "run": (0, 100), "main": (0, 100),
    }  # fmt: skip
    as_rows = shares(hot_from_tree(tree))
    assert as_rows["mix"] == (100, 100) and as_rows["hot_a"] == (0, 60), "inline frames as rows"


def test_the_default_derived_table_groups_by_symbol_and_the_toggle_shows_rows() -> None:
    p = split_profile()
    tree, hot = p.tree(), p.hot_functions()
    assert has_inlined(tree)
    assert derive_view(tree, hot, "all", None).hot[0].label == "hot_a"
    assert derive_view(tree, hot, "all", None, inline_rows=True).hot == hot
    state = ViewState()
    assert [f.label for f in state.derive(tree, hot).hot][:1] == ["hot_a"]
    assert state.toggle_inline_rows() is True
    assert state.derive(tree, hot).hot[0].label == "mix", "another choice, not the cached table"


def test_the_profiles_own_table_by_symbol_is_shown_as_it_is_and_only_then() -> None:
    p = split_profile()
    tree, hot, by_symbol = p.tree(), p.hot_functions(), p.hot_functions(by_symbol=True)
    assert shares(by_symbol) == shares(hot_by_symbol(tree))
    marked = (by_symbol[0],)  # a table no grouping of the tree makes: was it used?
    assert derive_view(tree, hot, "all", None, by_symbol=marked).hot == marked
    assert derive_view(tree, hot, "all", None, inline_rows=True, by_symbol=marked).hot == hot
    mixed = derive_view(tree, hot, "all", lambda n: n.label == "hot_b", by_symbol=marked)
    assert shares(mixed.hot)["hot_b"] == (30, 30), "a filtered tree is grouped anew"
    state = ViewState()
    assert state.cheap(tree, grouped=True) and state.derive(tree, hot, marked).hot == marked


def test_nested_inline_frames_and_an_inline_frame_without_a_function_above() -> None:
    p = Profile()
    p.add("app", [u("main"), u("f"), i("g"), i("h")], 4)  # h inlined into g inlined into f
    p.add("app", [i("orphan")], 2)  # nothing above it to count for: it stands for itself
    rows = shares(hot_by_symbol(p.tree()))
    assert rows == {"f": (4, 4), "main": (0, 4), "orphan": (2, 2)}


def test_a_function_inline_above_and_called_below_counts_its_total_once() -> None:
    p = Profile()
    p.add("app", [u("main"), i("g"), u("g"), u("leaf")], 3)  # g inlined into main, then called
    p.add("app", [u("main"), u("g"), i("g")], 2)  # recursion through an inline copy
    rows = shares(hot_by_symbol(p.tree()))
    assert rows["g"] == (2, 5) and rows["main"] == (0, 5) and rows["leaf"] == (3, 3)


def test_without_inline_frames_both_groupings_agree() -> None:
    p = Profile()
    p.add("app", [u("main"), u("a"), u("leaf")], 5)
    p.add("app", [u("main"), u("rec"), u("rec")], 2)
    tree = p.tree()
    assert not has_inlined(tree)
    assert hot_by_symbol(tree) == hot_from_tree(tree) == p.hot_functions()
    x = CallNode("x", "/m", inlined=True, self_count=1, total_count=1)
    plain = CallNode(
        "all", total_count=1, children=(CallNode("app", total_count=1, children=(x,)),)
    )
    assert shares(hot_by_symbol(plain)) == {"x": (1, 1)}, "plain nodes too"


NAMES = ("main", "f", "g", "h")
STACKS = st.lists(st.tuples(st.sampled_from(NAMES), st.booleans()), max_size=6)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["app", "other"]), STACKS, st.integers(-3, 9)), max_size=14),
    st.booleans(),
)
def test_the_profiles_table_by_symbol_is_the_grouping_of_its_tree(
    adds: list[tuple[str, list[tuple[str, bool]], int]], halve: bool
) -> None:
    """Kept as samples arrive (placement's marks, add_up), the table by symbol
    is what ``hot_by_symbol`` makes of the tree: after adds, removes (a
    window's tail) and a halving, in two profiles sharing one store."""
    profiles = (Profile(), Profile())
    profiles = (profiles[0], Profile(profiles[0].store))
    made: dict[tuple[object, ...], tuple[Frame, ...]] = {}
    for n, (process, stack, count) in enumerate(adds):
        frames = made.setdefault((process, *stack), tuple(i(f) if x else u(f) for f, x in stack))
        p = profiles[n % 2]
        if count > 0:
            p.add(process, frames, count)
        else:
            p.remove(process, frames, -count)
        if halve and n == len(adds) // 2:
            p.halve()
    for p in profiles:
        tree = p.tree()
        assert p.hot_functions(by_symbol=True) == hot_by_symbol(tree)
        assert p.hot_functions(3, by_symbol=True) == hot_by_symbol(tree, 3)
        assert p.hot_functions() == hot_from_tree(tree), "the other grouping still its own"
