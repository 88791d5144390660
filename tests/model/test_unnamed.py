"""A frame is unknown by its flag: ``--offsets`` names (``main+0x1a``) are
named frames; only a module-less frame from a folded file is judged by its
label."""

from __future__ import annotations

from bpftop.symbols.frame import Frame, Unresolved
from bpftop.tui.collect.stacks import relabel
from bpftop.tui.model.flame_layout import frame_kind, is_unnamed
from bpftop.tui.model.profile import Profile

M = "/usr/bin/app"


def test_offsets_names_are_named_frames() -> None:
    named = relabel(Frame("main", M, 0x1A), offsets=True, mangled=False)
    kernel = relabel(Frame("do_sys_open", "[kernel]", 0x9, kernel=True), True, False)
    assert named.label == "main+0x1a" and kernel.label == "do_sys_open+0x9"
    unnamed = Frame(None, M, 0x1A, reason=Unresolved.NO_SYMBOLS)
    folded_unknown = Frame("libz.so.1+0x10", "", 0)  # as a folded file gives it
    folded_blank = Frame("[unknown]", "", 0)
    p = Profile()
    p.add("app", [named, unnamed, folded_unknown, folded_blank, kernel])
    main = p.tree().children[0].children[0]
    lib = main.children[0]
    folded = lib.children[0]
    blank = folded.children[0]
    kern = blank.children[0]
    assert main.label == "main+0x1a" and not is_unnamed(main) and frame_kind(main) == "user"
    assert is_unnamed(lib) and frame_kind(lib) == "unknown"
    assert is_unnamed(folded) and is_unnamed(blank)
    assert frame_kind(kern) == "kernel"
