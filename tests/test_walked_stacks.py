"""The walker's drained stack store read into packed stacks and the walk's
flags (no kernel needed)."""

from __future__ import annotations

import ctypes as ct
from array import array

from bpftop.bpf.batch import Drained
from bpftop.bpf.raw import WalkedStack
from bpftop.bpf.unwinder import _stacks


class Ustack(ct.Structure):
    """``struct ustack`` of unwind.bpf.c, 4 addresses deep."""

    _fields_ = (
        ("hash", ct.c_uint64),
        ("len", ct.c_uint32),
        ("flags", ct.c_uint32),
        ("addrs", ct.c_uint64 * 4),
    )


def test_each_stack_is_the_words_in_use_of_its_value() -> None:
    values = [
        Ustack(1, 2, 0, (ct.c_uint64 * 4)(0x7F00_0000_0001, 0x5500_0000_0002, 99, 99)),
        Ustack(2, 0, 0x100, (ct.c_uint64 * 4)(99, 99, 99, 99)),  # ended by frame pointer
        Ustack(3, 9, 0x102, (ct.c_uint64 * 4)(1, 2, 3, 4)),  # longer than the array: cut
    ]
    drained = Drained(
        3, array("I", [0x4000_0001, 0x4000_0002, 0x4000_0003]).tobytes(),
        b"".join(bytes(v) for v in values),
    )  # fmt: skip
    stacks = _stacks(drained, Ustack)
    assert stacks == {
        0x4000_0001: WalkedStack(array("Q", [0x7F00_0000_0001, 0x5500_0000_0002]).tobytes()),
        0x4000_0002: WalkedStack(b"", fp_end=True),
        0x4000_0003: WalkedStack(array("Q", [1, 2, 3, 4]).tobytes(), fp_from=1, fp_end=True),
    }
