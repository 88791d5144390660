"""JIT code named from /tmp/perf-PID.map, read through /proc/PID/root, re-read
when it grows, junk skipped; anonymous code without a map says so."""

from __future__ import annotations

import os

from bpftop.symbols.frame import Unresolved
from bpftop.symbols.perfmap import PerfMap, parse_perf_map_line, read_nspid
from bpftop.symbols.symbolizer import Symbolizer
from tests.symbols.test_process import FakeClock


def test_parse_lines() -> None:
    entry = parse_perf_map_line("7f00aa001000 1a0 LazyCompile:*foo bar.js:3\n")
    assert entry is not None
    assert (entry.start, entry.size, entry.name) == (
        0x7F00AA001000,
        0x1A0,
        "LazyCompile:*foo bar.js:3",
    )
    assert parse_perf_map_line("0x10 0x20 py::f:/x.py") is not None
    for junk in ["", "\n", "zz 10 name", "10 zz name", "10 20", "0 10 zero", "10 0 empty",
                 "10 -5 neg", "1 ffffffffffff huge", "   ", "10 20    "]:  # fmt: skip
        assert parse_perf_map_line(junk) is None, junk


def test_grows_and_is_reread_from_where_it_stopped(tmp_path) -> None:
    path = tmp_path / "perf-1.map"
    perf_map = PerfMap(str(path))
    assert not perf_map.refresh() and not perf_map.exists
    path.write_text("1000 100 first\njunk line here\n2000 10 sec")  # last line half-written
    assert perf_map.refresh() and len(perf_map) == 1
    assert perf_map.lookup(0x1050) == ("first", 0x50)
    assert perf_map.lookup(0x2000) is None and perf_map.lookup(0x1100) is None
    with path.open("a") as f:
        f.write("ond\n1080 10 nested\n")
    assert perf_map.refresh() and len(perf_map) == 3
    assert perf_map.lookup(0x2005) == ("second", 5)
    assert perf_map.lookup(0x1085) == ("nested", 5)
    assert perf_map.lookup(0x1095) == ("first", 0x95)  # past nested, still in first
    assert not perf_map.refresh()  # unchanged
    path.write_text("3000 10 replaced\n")  # shorter: read again from the start
    assert perf_map.refresh() and perf_map.lookup(0x1050) is None
    assert perf_map.lookup(0x3001) == ("replaced", 1)


def test_live_jit_process(jit_built, run) -> None:
    prog = run(jit_built)
    try:
        _check_live_jit(prog)
    finally:
        prog.finish()  # the program removes its perf map when stdin closes
    assert not os.path.exists(f"/tmp/perf-{prog.pid}.map")


def _check_live_jit(prog) -> None:
    assert read_nspid(prog.pid) == prog.pid
    clock = FakeClock()
    sym = Symbolizer(clock=clock)
    process = sym.prepare(prog.pid)
    assert process.perf_map.path == f"/proc/{prog.pid}/root/tmp/perf-{prog.pid}.map"
    hot, cold = sym.user_frames(prog.pid, [prog.addrs["jit_hot"] + 3, prog.addrs["jit_cold"] + 1])
    assert (hot.function, hot.offset, hot.reason) == ("LazyCompile:*hot_loop app.js:12", 3, None)
    assert hot.module_name == f"perf-{prog.pid}.map"
    assert (cold.function, cold.offset) == ("Function:~cold_path", 1)  # looked up at +0
    late = prog.addrs["jit_late"] + 4
    frame = sym.user_frames(prog.pid, [late])[0]
    assert frame.function is None and frame.reason is Unresolved.ANONYMOUS  # not in the map
    prog.send("more")
    prog.read_until_ready()
    clock.now_s += 10  # the map is re-read on a miss, rate-limited
    frame = sym.user_frames(prog.pid, [late])[0]
    assert (frame.function, frame.offset, frame.mangled) == ("jit::late()", 4, "_ZN3jit4lateEv")


def test_jit_without_perf_map(jit_built, run) -> None:
    prog = run(jit_built, "nomap")
    frame = Symbolizer().user_frames(prog.pid, [prog.addrs["jit_hot"] + 3])[0]
    assert frame.function is None and frame.reason is Unresolved.JIT_NO_PERF_MAP
    assert not os.path.exists(f"/tmp/perf-{prog.pid}.map")
