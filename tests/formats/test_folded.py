"""Folded-stack output: format, sanitizing, round trip, atomic writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpftop.base.errors import OutputError
from bpftop.symbols.frame import Frame
from bpftop.tui.formats.folded_tree import folded_tree, parse_folded, parse_lines
from bpftop.tui.formats.profile_io import write_folded
from bpftop.tui.formats.saved import ProfileMeta, from_tree
from bpftop.tui.formats.saved_folded import from_folded, saved_lines
from bpftop.tui.model.profile import Profile
from bpftop.tui.model.snapshot import CallNode
from tests.formats.folded_oracle import folded_lines
from tests.tui.demo_fixture import demo_profile


def lines_of(tree: CallNode) -> list[str]:
    """What the writers write for ``tree`` (``record -o``, ``w``), in their order."""
    return list(saved_lines(from_tree(tree, ProfileMeta())))


def test_the_writers_lines_are_the_tree_walks() -> None:
    tree = demo_profile().tree()
    assert sorted(lines_of(tree)) == sorted(folded_lines(tree))


def u(name: str) -> Frame:
    return Frame(name, "/bin/app", 0)


def k(name: str) -> Frame:
    return Frame(name, "[kernel]", 0, kernel=True)


def test_lines_per_leaf_with_kernel_suffix() -> None:
    p = Profile()
    p.add("app", [u("main"), u("a")], 3)
    p.add("app", [u("main"), u("write"), k("do_syscall_64"), k("vfs_write")], 2)
    p.add("app", [u("main")], 1)
    assert sorted(lines_of(p.tree())) == [
        "app;main 1",
        "app;main;a 3",
        "app;main;write;do_syscall_64_[k];vfs_write_[k] 2",
    ]


def test_inline_frames_carry_the_inline_suffix_and_read_back_inlined() -> None:
    p = Profile()
    p.add("app", [u("main"), u("hot_a"), Frame("mix", "/bin/app", 0, inlined=True)], 6)
    p.add("app", [u("main"), u("mix")], 1)  # the same function, called: no suffix
    lines = sorted(lines_of(p.tree()))
    assert lines == ["app;main;hot_a;mix_[i] 6", "app;main;mix 1"]
    tree = folded_tree(parse_lines("\n".join(lines))[0])
    main = tree.children[0].children[0]
    hot_a = next(c for c in main.children if c.label == "hot_a")
    mix = hot_a.children[0]
    assert (mix.label, mix.inlined, hot_a.inlined) == ("mix", True, False)
    assert not next(c for c in main.children if c.label == "mix").inlined, "per node, not per name"
    saved = from_folded("\n".join(lines))
    frames = {f.name: f.inlined for s in saved.stacks for f in s.frames}
    assert frames["hot_a"] is False and any(f.inlined for s in saved.stacks for f in s.frames)
    assert sorted(saved_lines(saved)) == lines, "written back as read"


def test_unresolved_frames_use_module_offset_label() -> None:
    p = Profile()
    p.add("app", [u("main"), Frame(None, "/usr/lib/libz.so.1", 0x1A2B)], 1)
    assert list(lines_of(p.tree())) == ["app;main;libz.so.1+0x1a2b 1"]


def test_labels_are_sanitized_so_lines_parse() -> None:
    p = Profile()
    p.add("my;proc", [u("ns::f;g"), u("line\nbreak"), u("with space")], 4)
    lines = list(lines_of(p.tree()))
    assert lines == ["my:proc;ns::f:g;line break;with space 4"]
    assert parse_folded("\n".join(lines)) == ({"my:proc;ns::f:g;line break;with space": 4}, 0)


def test_round_trip_through_the_folded_reader() -> None:
    tree = demo_profile().tree()
    text = "\n".join(lines_of(tree)) + "\n"
    parsed, skipped = parse_folded(text)
    assert sum(parsed.values()) == tree.total_count
    assert len(parsed) == len(list(lines_of(tree)))
    assert skipped == 0
    rebuilt = Profile()
    for line, count in parsed.items():
        stack = line.split(";")
        rebuilt.add(stack[0], [Frame(label, "", 0) for label in stack[1:]], count)
    assert set(lines_of(rebuilt.tree())) == set(lines_of(tree))


def test_the_folded_reader_counts_bad_lines_and_sums_duplicates() -> None:
    parsed = parse_folded("a;b 2\nno-count\na;b 3\n\nx;y -1\nz notanumber\n c 1\n")
    assert parsed == ({"a;b": 5, "c": 1}, 3)


def test_write_folded_writes_atomically(tmp_path: Path) -> None:
    tree = demo_profile().tree()
    target = tmp_path / "out.folded"
    target.write_text("old content\n")
    n = write_folded(tree, target)
    text = target.read_text()
    assert text == "".join(line + "\n" for line in lines_of(tree))
    assert sorted(text.splitlines()) == sorted(folded_lines(tree))
    assert n == len(text.splitlines())
    assert [p.name for p in tmp_path.iterdir()] == ["out.folded"]
    assert target.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("where", ["missing-dir", "under-a-file", "is-a-dir"])
def test_write_folded_unwritable_raises_output_error(tmp_path: Path, where: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    (tmp_path / "adir").mkdir()
    target = {
        "missing-dir": tmp_path / "nope" / "out.folded",
        "under-a-file": blocker / "out.folded",
        "is-a-dir": tmp_path / "adir",
    }[where]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(OutputError) as info:
        write_folded(demo_profile().tree(), target)
    assert str(target) in str(info.value)
    assert "\n" not in str(info.value)
    assert info.value.exit_code == 6
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert after == before
