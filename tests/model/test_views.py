"""Unit tests of the derived views: zoom, filter, callers, search, sort, flame layout."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bpftop.symbols.frame import Frame, Unresolved
from bpftop.tui.model.callers_tree import callers_tree
from bpftop.tui.model.derived import (
    Match,
    filter_tree,
    hot_from_tree,
    hottest_path_of,
    keep_frames,
    sort_hot,
    trend,
)
from bpftop.tui.model.flame_layout import flame_rows, frame_kind, span_at
from bpftop.tui.model.node_paths import chain_to, compile_search, next_match, node_at
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.viewstate import ViewState
from tests.formats.folded_oracle import folded_lines
from tests.model import oracle_views as oracle

M = "/bin/app"


def u(name: str) -> Frame:
    return Frame(name, M, 0)


def key(name: str) -> tuple[str, str, bool]:
    return (name, M, False)


def path(*names: str) -> tuple[tuple[str, str, bool], ...]:
    return (("app", "", False), *(key(n) for n in names))


def profile() -> Profile:
    p = Profile()
    p.add("app", [u("main"), u("a"), u("leaf")], 5)
    p.add("app", [u("main"), u("b"), u("leaf")], 3)
    p.add("app", [u("main"), u("b")], 1)
    p.add("app", [u("main"), u("rec"), u("rec"), u("leaf")], 2)
    p.add("app", [u("other")], 1)
    return p


def labels(node: CallNode) -> list[str]:
    return [c.label for c in node.children]


def test_node_at_and_chain_to() -> None:
    tree = profile().tree()
    b = node_at(tree, path("main", "b"))
    assert b is not None and (b.self_count, b.total_count) == (1, 4)
    assert node_at(tree, path("main", "nope")) is None
    assert node_at(tree, ()) is tree
    chain = chain_to(tree, path("main", "b"))
    assert list(folded_lines(chain)) == ["app;main;b 1", "app;main;b;leaf 3"]
    assert chain.total_count == 4


def test_filter_keeps_only_matching_stacks() -> None:
    tree = profile().tree()
    kept = filter_tree(tree, lambda n: n.label == "b")
    assert kept is not None and kept.total_count == 4
    assert sorted(folded_lines(kept)) == ["app;main;b 1", "app;main;b;leaf 3"]
    leaf = filter_tree(tree, lambda n: n.label == "leaf")
    assert leaf is not None and leaf.total_count == 10
    assert filter_tree(tree, lambda n: False) is None


def test_hot_from_tree_equals_profile_hot_functions() -> None:
    p = profile()
    assert hot_from_tree(p.tree()) == p.hot_functions()
    assert hot_from_tree(p.tree(), 2) == p.hot_functions(2)


def test_callers_tree_weights_each_path() -> None:
    tree = profile().tree()
    callers = callers_tree(tree, key("leaf"))
    (fn,) = callers.children
    assert fn.label == "leaf" and fn.total_count == 10 and callers.total_count == 10
    assert [(c.label, c.total_count) for c in fn.children] == [("a", 5), ("b", 3), ("rec", 2)]
    rec = fn.children[2]
    assert labels(rec) == ["rec"] and labels(rec.children[0]) == ["main"]
    main = rec.children[0].children[0]
    assert labels(main) == ["app"] and main.children[0].self_count == 2


def test_callers_self_is_the_functions_leaf_samples_on_each_path() -> None:
    p = profile()
    p.add("app", [u("main"), u("b"), u("leaf"), u("deeper")], 4)  # leaf not the leaf: no self
    callers = callers_tree(p.tree(), key("leaf"))
    (fn,) = callers.children
    assert (fn.self_count, fn.total_count) == (10, 14)
    rows = {c.label: (c.self_count, c.total_count) for c in fn.children}
    assert rows == {"a": (5, 5), "b": (3, 7), "rec": (2, 2)}
    b = fn.children[0]
    assert b.label == "b" and b.has_children  # self 3 of 7: the count says nothing of paths
    (main,) = b.children
    assert (main.label, main.self_count, main.total_count) == ("main", 3, 7)
    (process,) = main.children
    assert (process.label, process.self_count) == ("app", 3) and not process.has_children


def test_callers_self_counts_recursive_leaves_under_the_outermost_call() -> None:
    p = Profile()
    p.add("app", [u("main"), u("rec"), u("rec")], 4)
    p.add("app", [u("main"), u("rec")], 1)
    p.add("app", [u("main"), u("rec"), u("x")], 2)
    (fn,) = callers_tree(p.tree(), key("rec")).children
    assert (fn.self_count, fn.total_count) == (5, 7)
    (main,) = fn.children
    assert (main.self_count, main.total_count) == (5, 7) and main.has_children


def test_callers_rows_keep_children_when_the_function_is_always_the_leaf() -> None:
    (fn,) = callers_tree(profile().tree(), key("leaf")).children
    a = fn.children[0]
    assert a.label == "a" and a.self_count == a.total_count == 5
    assert a.has_children and labels(a) == ["main"]


def test_callers_of_recursive_function_count_once() -> None:
    callers = callers_tree(profile().tree(), key("rec"))
    assert callers.children[0].total_count == 2
    assert labels(callers.children[0]) == ["main"]
    assert callers_tree(profile().tree(), key("missing")).children == ()


def test_search_helpers() -> None:
    rx = compile_search("LEAF|^a$")
    assert isinstance(rx, re.Pattern) and not rx.flags & re.IGNORECASE
    rx = compile_search("leaf")
    assert isinstance(rx, re.Pattern) and rx.search("LEAF")
    error = compile_search("(")
    assert isinstance(error, str) and error.startswith("bad regex")
    tree = profile().tree()
    found = oracle.matching_paths(tree, lambda n: n.label == "leaf")
    assert found == [path("main", "a", "leaf"), path("main", "b", "leaf"),
                     path("main", "rec", "rec", "leaf")]  # fmt: skip
    assert forward_matches(tree, lambda n: n.label == "leaf") == found
    assert len(oracle.matching_paths(tree, lambda n: True, limit=3)) == 3
    assert hottest_path_of(tree, key("leaf")) == path("main", "a", "leaf")
    assert hottest_path_of(tree, key("nope")) is None


def test_sort_hot_and_trend() -> None:
    hot = profile().hot_functions()
    assert sort_hot(hot, "total", True)[0].label == "main"
    assert [f.label for f in sort_hot(hot, "function", False)][:2] == ["a", "b"]
    assert sort_hot(hot, "self", True)[0].label == "leaf"
    assert sort_hot(hot, "module", False)[0].module == M
    assert sort_hot(hot, "samples", False)[0].self_count == 0
    assert (trend(None, 5), trend(5, 6), trend(5, 4), trend(5, 5.01)) == ("+", "▲", "▼", " ")


def test_flame_rows_layout() -> None:
    tree = profile().tree()
    rows = flame_rows(tree, (), 24, 10)
    assert [s.node.label for s in rows[0]] == ["all"] and rows[0][0].width == 24
    main_row = rows[2]
    assert [s.node.label for s in main_row] == ["main", "other"]
    assert main_row[0].width == 22 and main_row[1].x == 22
    for row in rows:
        for left, right in itertools.pairwise(row):
            assert left.x + left.width <= right.x
    assert span_at(rows, path("main", "a")) == (3, 0)
    assert span_at(rows, path("zzz")) is None
    assert flame_rows(tree, (), 0, 5) == [] and len(flame_rows(tree, (), 10, 2)) == 2
    zoomed = flame_rows(node_at(tree, path("main")) or tree, path("main"), 12, 10)
    assert zoomed[0][0].path == path("main") and zoomed[1][0].path == path("main", "a")


def test_flame_leaves_out_boxes_narrower_than_a_cell() -> None:
    p = Profile()
    p.add("app", [Frame("main", M, 0), Frame("wide", M, 0)], 99)
    p.add("app", [Frame("main", M, 0), Frame("thin", M, 0)], 1)
    narrow = flame_rows(p.tree(), (), 50, 10)  # thin: half a cell
    assert [s.node.label for s in narrow[3]] == ["wide"]
    wide = flame_rows(p.tree(), (), 100, 10)  # thin: one cell
    assert [(s.node.label, s.width) for s in wide[3]] == [("wide", 99), ("thin", 1)]


def test_frame_kind_and_profile_source() -> None:
    p = Profile()
    p.add("app", [Frame("f", M, 0, file="/src/x.c", line=7), Frame("g", M, 0, inlined=True),
                  Frame(None, M, 0x10, reason=Unresolved.NO_SYMBOLS),
                  Frame("k", "[kernel]", 0, kernel=True)])  # fmt: skip
    tree = p.tree()
    f = tree.children[0].children[0]
    g = f.children[0]
    unknown = g.children[0]
    kern = unknown.children[0]
    assert f.source == "x.c:7" and frame_kind(f) == "user"
    assert frame_kind(g) == "inlined" and frame_kind(unknown) == "unknown"
    assert frame_kind(kern) == "kernel"
    assert {h.label: h.source for h in p.hot_functions()}["f"] == "x.c:7"


def test_viewstate_zoom_search_filter_export() -> None:
    tree = profile().tree()
    hot = profile().hot_functions()
    state = ViewState()
    assert not state.zoom_out() and not state.zoom_in(())
    assert state.zoom_in(path("main", "b")) and not state.zoom_in(path("main", "b"))
    assert state.breadcrumb(tree) == ["all", "app", "main", "b"]
    assert list(folded_lines(state.export_tree(tree))) == ["app;main;b 1", "app;main;b;leaf 3"]
    assert state.zoom_out() and state.zoom_path == ()
    assert state.export_tree(tree) is tree
    assert not state.toggle_filter()
    assert state.set_search("(") is not None and state.match is None
    assert state.set_search("^b$") is None and state.match is not None
    assert state.derive(tree, hot).tree is tree
    assert state.toggle_filter()
    derived = state.derive(tree, hot)
    assert derived.tree.total_count == 4 and derived.hot[0].label == "leaf"
    assert state.derive(tree, hot) is derived
    state.set_search("")
    assert not state.filtering and state.derive(tree, hot).tree is tree


def test_keep_frames_merges_what_was_under_dropped_frames() -> None:
    k = Frame("sys_x", "[kernel]", 0, kernel=True)
    p = Profile()
    p.add("app", [u("main"), k, u("cb")], 2)  # a user callback under a kernel frame
    p.add("app", [u("main"), u("cb")], 3)
    p.add("app", [u("main"), k], 4)
    tree = p.tree()
    user = keep_frames(tree, lambda n: not n.kernel)
    main = node_at(user, path("main"))
    assert main is not None and (main.self_count, main.total_count) == (4, 9)
    assert [(c.label, c.total_count, c.self_count) for c in main.children] == [("cb", 5, 5)]
    assert user.total_count == tree.total_count == 9
    kernel = keep_frames(tree, lambda n: n.kernel)
    app = kernel.children[0]
    assert (app.self_count, [c.label for c in app.children]) == (3, ["sys_x"])
    assert app.children[0].total_count == 6 and app.children[0].self_count == 6


def test_viewstate_frame_toggles() -> None:
    k = Frame("sys_x", "[kernel]", 0, kernel=True)
    p = Profile()
    p.add("app", [u("main"), k], 4)
    state = ViewState()
    assert state.toggle_frames("user") == "user"
    derived = state.derive(p.tree(), p.hot_functions())
    assert [f.label for f in derived.hot] == ["main"]
    assert state.toggle_frames("kernel") == "kernel"
    assert state.toggle_frames("kernel") == "all"
    assert state.derive(p.tree(), p.hot_functions()).hot == p.hot_functions()


def test_next_match_walks_in_display_order_and_wraps() -> None:
    tree = profile().tree()
    is_leaf = lambda n: n.label == "leaf"  # noqa: E731
    a, b, rec = (
        path("main", "a", "leaf"),
        path("main", "b", "leaf"),
        path("main", "rec", "rec", "leaf"),
    )
    assert next_match(tree, is_leaf, None, 1) == a
    assert next_match(tree, is_leaf, a, 1) == b
    assert next_match(tree, is_leaf, rec, 1) == a
    assert next_match(tree, is_leaf, b, -1) == a
    assert next_match(tree, is_leaf, a, -1) == rec
    assert next_match(tree, is_leaf, path("main"), 1) == a
    assert next_match(tree, lambda n: False, a, 1) is None


def eager(node: CallNode) -> CallNode:
    """A plain copy of a (live) tree: the node-walking code paths run on it."""
    return node._replace(children=tuple(eager(c) for c in node.children))


def forward_matches(tree: CallNode, match: Match) -> list[tuple[tuple[str, str, bool], ...]]:
    """Every match ``next_match`` visits going forward from the top, until it wraps."""
    found: list[tuple[tuple[str, str, bool], ...]] = []
    here = next_match(tree, match, None, 1)
    while here is not None and here not in found:
        found.append(here)
        here = next_match(tree, match, here, 1)
    return found


FUNCTIONS = ["main", "a", "b", "rec", "leaf", "k1"]
SPECIAL = {  # frames that carry more than a name: kernel, a source line, inlined
    "k1": Frame("k1", "[kernel]", 0, kernel=True),
    "b": Frame("b", M, 0, file="/src/b.c", line=12),
    "leaf": Frame("leaf", M, 0, inlined=True),
}


@settings(max_examples=60, deadline=None)
def assert_has_children_without_making_them(node: CallNode) -> None:
    has = node.has_children  # asked first: a live node answers from its counts
    assert has == bool(node.children)
    for child in node.children:
        assert_has_children_without_making_them(child)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["app", "other"]),
            st.lists(st.sampled_from(FUNCTIONS), max_size=7),
            st.integers(1, 9),
        ),
        min_size=1,
        max_size=25,
    ),
    st.sampled_from(FUNCTIONS),
)
def test_live_snapshot_views_equal_node_walks(
    stacks: list[tuple[str, list[str], int]], name: str
) -> None:
    """Filter, frames kept, per-function table, callers and hottest path
    computed on a snapshot's arrays agree with the same views walked node by
    node (the oracle), and with themselves on a plain copy of the tree."""
    p = Profile()
    for process, names, count in stacks:
        frames = [SPECIAL.get(n) or u(n) for n in names]
        p.add(process, frames, count)
    live = p.tree()
    assert_has_children_without_making_them(live)
    plain = eager(live)
    assert live == plain
    fn = ("k1", "[kernel]", True) if name == "k1" else key(name)
    match = lambda n: n.label == name  # noqa: E731
    callers = callers_tree(live, fn)
    assert callers == oracle.callers_tree(plain, fn) == callers_tree(plain, fn)
    assert_has_children_without_making_them(callers)
    for tree in (callers, node_at(live, path("main")), node_at(live, path("main", "rec"))):
        if tree is not None:  # a zoom, or the callers view: the hottest path below the node
            found = oracle.hottest_path_of(eager(tree), key("main"))
            assert hottest_path_of(tree, key("main")) == found
            assert hottest_path_of(tree, fn) == oracle.hottest_path_of(eager(tree), fn)
            assert forward_matches(tree, match) == oracle.matching_paths(eager(tree), match)
    hottest = hottest_path_of(live, fn)
    assert hottest == oracle.hottest_path_of(plain, fn) == hottest_path_of(plain, fn)
    hot = hot_from_tree(live)
    assert hot == oracle.hot_from_tree(plain) == hot_from_tree(plain) == p.hot_functions()
    paths = oracle.matching_paths(plain, match)
    assert forward_matches(live, match) == paths
    for here in [None, *paths[:2], path("main")]:
        for step in (1, -1):
            assert next_match(live, match, here, step) == next_match(plain, match, here, step)
    kept = filter_tree(live, match)
    assert kept == oracle.filter_tree(plain, match) == filter_tree(plain, match)
    if kept is not None:
        assert hot_from_tree(kept) == oracle.hot_from_tree(eager(kept))
    keeps: list[Match] = [lambda n: not n.kernel, lambda n: n.kernel, lambda n: n.label != name]
    for keep in keeps:
        user = keep_frames(live, keep)
        assert user == oracle.keep_frames(plain, keep) == keep_frames(plain, keep)
        assert hot_from_tree(user) == oracle.hot_from_tree(oracle.keep_frames(plain, keep))
        assert filter_tree(user, match) == oracle.filter_tree(eager(user), match)
    for process, names, count in stacks[::2]:  # a window's tail: nodes may fall to zero
        p.remove(process, [SPECIAL.get(n) or u(n) for n in names], count)
    assert_has_children_without_making_them(p.tree())


def test_python_only_keeps_the_python_chain_of_a_merged_stack() -> None:
    """A merged stack (native start-up, Python frames where the eval loop ran, a
    C call, the kernel) with ``P``: only the Python frames, their counts whole."""

    def py(name: str, line: int) -> Frame:
        return Frame(f"{name} (/w/app.py:{line})", "/w/app.py", 0, file="/w/app.py", line=line)

    unread = Frame(None, "[python]", 0x7F00)  # a code object that could not be read
    k = Frame("sys_x", "[kernel]", 0, kernel=True)
    p = Profile()
    p.add("python3", [u("_start"), py("<module>", 9), py("run", 3), u("time_sleep"), k], 6)
    p.add("python3", [u("_start"), py("<module>", 9), unread], 2)
    p.add("python3", [u("_start"), u("Py_RunMain")], 1)  # no Python frame at all
    state = ViewState()
    assert not state.toggle_python_functions()  # by line (G)
    assert state.toggle_frames("python") == "python"
    tree = state.derive(p.tree(), p.hot_functions()).tree
    app = tree.children[0]
    assert (app.label, app.total_count, app.self_count) == ("python3", 9, 1)
    module = app.children[0]
    assert (module.label, module.total_count) == ("<module> (/w/app.py:9)", 8)
    assert [(c.label, c.self_count) for c in module.children] == [
        ("run (/w/app.py:3)", 6), (unread.label, 2)]  # fmt: skip
    assert state.toggle_frames("python") == "all"


def test_python_frames_by_function_merge_their_lines() -> None:
    """By default (py-spy top's grouping): ``run (app.py:3)`` and ``run (app.py:4)``
    become one ``run (app.py)`` row; a recursion through two lines of one function
    counts once in its total. ``G`` shows the lines."""

    def py(name: str, line: int) -> Frame:
        return Frame(f"{name} (/w/app.py:{line})", "/w/app.py", 0, file="/w/app.py", line=line)

    p = Profile()
    p.add("python3", [u("_start"), py("run", 3), py("leaf", 8)], 5)
    p.add("python3", [u("_start"), py("run", 4), py("leaf", 9)], 3)
    p.add("python3", [u("_start"), py("run", 4), py("run", 3)], 2)  # run calls itself
    state = ViewState()
    assert state.python_functions
    derived = state.derive(p.tree(), p.hot_functions())
    start = derived.tree.children[0].children[0]
    assert [(c.label, c.total_count) for c in start.children] == [("run (/w/app.py)", 10)]
    run = start.children[0]
    assert [(c.label, c.total_count, c.self_count) for c in run.children] == [
        ("leaf (/w/app.py)", 8, 8), ("run (/w/app.py)", 2, 2)]  # fmt: skip
    rows = {h.label: (h.self_count, h.total_count) for h in derived.hot}
    assert rows["run (/w/app.py)"] == (2, 10) and rows["leaf (/w/app.py)"] == (8, 8)
    assert not state.toggle_python_functions()
    assert state.derive(p.tree(), p.hot_functions()).tree is p.tree()
    assert state.toggle_python_functions()
    native = Profile()  # no Python frame: nothing to regroup, the snapshot's tree as it is
    native.add("demo", [u("_start"), u("main")], 4)
    assert state.derive(native.tree(), native.hot_functions()).tree is native.tree()
    assert state.cheap(native.tree()) and not state.cheap(p.tree())
