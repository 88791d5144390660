"""A lookup miss says which miss it is: a file without symbols (a debug
package would name it) is not an address between the symbols of a file with
a full ``.symtab`` (nothing would); each has its own hint."""

from __future__ import annotations

import os

from bpftop.symbols.frame import Frame, Unresolved
from bpftop.symbols.hints import hint
from bpftop.symbols.symbolizer import Symbolizer


def test_an_address_between_symbols_is_not_a_file_without_symbols(built, run, nm) -> None:
    prog = run(built.pie)
    symbols = sorted(nm(built.pie), key=lambda s: s.start)
    start = next(s for s in symbols if s.name == "_start")
    after = next(s for s in symbols if s.start > start.start)
    gap = start.start + start.size + 2  # _start's padding, before the next function
    assert start.size and gap < after.start
    alpha = next(s for s in symbols if s.name == "fix_alpha")
    address = prog.addrs["fix_alpha"] - alpha.start + gap
    frame = Symbolizer().user_frames(prog.pid, [address])[0]
    assert frame.function is None and frame.reason is Unresolved.NOT_COVERED
    assert frame.module == os.path.realpath(built.pie)
    text = hint(frame)
    assert "no function at this address" in text and "debug package would not" in text
    assert "install" not in text and "-dbgsym" not in text


def test_a_stripped_file_is_still_a_file_without_symbols(built, run) -> None:
    prog = run(built.stripped)
    frame = Symbolizer().user_frames(prog.pid, [prog.addrs["fix_alpha"] + 4])[0]
    assert frame.reason is Unresolved.NO_SYMBOLS
    assert "has no symbols" in hint(frame)


def test_truncation_hints_name_the_walker_not_frame_pointers_alone() -> None:
    cut = hint(Frame(None, "", 0, reason=Unresolved.STACK_TRUNCATED))
    assert "walk stopped before main or a thread start" in cut and "unwind table" in cut
    deep = hint(Frame(None, "", 0, reason=Unresolved.STACK_TOO_DEEP))
    assert "walk limit" in deep and "frame pointers" not in deep


def test_stripped_code_groups_by_the_function_its_fde_covers(built, run, nm) -> None:
    """No symbol names fix_alpha in the stripped file, but its .eh_frame FDE
    does: every address in it is one frame, at the file offset of its start."""
    prog = run(built.stripped)
    symbols = {s.name: s for s in nm(built.pie)}  # the same code, unstripped
    alpha, beta = symbols["fix_alpha"], symbols["fix_beta"]
    base = prog.addrs["fix_alpha"] - alpha.start
    sym = Symbolizer()
    inside = [prog.addrs["fix_alpha"] + d for d in (0, 1, alpha.size // 2, alpha.size - 1)]
    frames = {sym.user_frames(prog.pid, [a])[0] for a in inside}
    assert len(frames) == 1, frames
    (frame,) = frames
    process = sym.process(prog.pid)
    assert process is not None and process.maps is not None
    entry = next(e for e in process.maps.entries if e.contains(inside[0]))
    assert frame.offset == entry.file_offset(prog.addrs["fix_alpha"])
    assert frame.function is None and frame.reason is Unresolved.NO_SYMBOLS
    other = sym.user_frames(prog.pid, [base + beta.start + 1])[0]
    assert other.label != frame.label and other.offset == frame.offset + beta.start - alpha.start
