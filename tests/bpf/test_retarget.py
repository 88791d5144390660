"""Copies are compiled instructions with one map swapped (bpf/retarget.py):
the walker's (tests/bpf/test_probe_stacks.py walks stacks with them) and the
handlers' slot-1 copies (tests/bpf/test_probe_switch.py switches probes through them)."""

from __future__ import annotations

import struct

import pytest

from bpftop.bpf.retarget import retarget


def _insn(code: int, regs: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, regs, 0, imm)


def _map_load(fd: int, pseudo: int = 1) -> bytes:  # ld_imm64 r1, map fd: two slots
    return _insn(0x18, 0x01 | pseudo << 4, fd) + _insn(0, 0, 0)


def test_only_the_map_loads_of_the_old_map_change() -> None:
    code = (
        _insn(0xB7, 0x01, 7)  # mov r1, 7 (an imm equal to the fd: not a map load)
        + _map_load(7, pseudo=0)  # a 64-bit constant 7, not a map
        + _map_load(9)  # another map
        + _map_load(7)  # the map
        + _insn(0x85, 0, 12)  # call bpf_tail_call
        + _map_load(7)  # the map again (clang may load it twice)
    )
    out = retarget(code, 7, 11)
    assert len(out) == len(code)
    assert out == code.replace(_map_load(7), _map_load(11))
    assert out[8:24] == _map_load(7, pseudo=0)


def test_a_function_that_never_loads_the_map_is_refused() -> None:
    with pytest.raises(ValueError):
        retarget(_map_load(9) + _map_load(7, pseudo=0), 7, 11)


def test_the_second_slot_of_a_load_is_not_read_as_an_instruction() -> None:
    # The second slot's bytes spell a map load of 7 too: it must be skipped.
    tricky = _insn(0x18, 0x11, 3) + _map_load(7)[:8]
    assert retarget(tricky + _map_load(7), 7, 11) == tricky + _map_load(11)
