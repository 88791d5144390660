"""``regrouped_path``: a path carried between Python frames by line and by function."""

from __future__ import annotations

from bpftop.symbols.frame import Frame
from bpftop.tui.model.derived import rename_frames
from bpftop.tui.model.node_paths import by_function, node_at, regrouped_path
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode

PY = "/w/app.py"


def by_line() -> CallNode:
    def py(name: str, line: int) -> Frame:
        return Frame(f"{name} ({PY}:{line})", PY, 0)

    profile = Profile()
    profile.add("p", [py("main", 3), py("parse", 6)], 50)
    profile.add("p", [py("main", 3), py("parse", 5), Frame("split", "/bin/p", 0)], 20)
    profile.add("p", [py("main", 4)], 5)
    return profile.tree()


def test_a_path_by_line_is_found_by_function_and_back() -> None:
    lines = by_line()
    functions = rename_frames(lines, by_function)
    path = (("p", "", False), (f"main ({PY}:3)", PY, False), (f"parse ({PY}:5)", PY, False),
            ("split", "/bin/p", False))  # fmt: skip
    assert node_at(lines, path) is not None
    moved = regrouped_path(functions, path)
    assert moved is not None and [k[0] for k in moved] == [
        "p",
        f"main ({PY})",
        f"parse ({PY})",
        "split",
    ]
    back = regrouped_path(lines, moved)  # parse:6 is hotter, but only parse:5 leads to split
    assert back == path
    assert regrouped_path(lines, moved[:3]) == (*path[:2], (f"parse ({PY}:6)", PY, False))


def test_a_path_with_no_counterpart_is_none() -> None:
    assert regrouped_path(by_line(), (("p", "", False), ("nowhere", "/bin/p", False))) is None
    assert regrouped_path(by_line(), ()) is None
