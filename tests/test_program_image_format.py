"""Program images as data (bpf/program_image.py): map loads renumbered, read back or refused."""

from __future__ import annotations

import struct

import pytest

from bpftop.bpf.program_image import MapSpec, ProgramImage, rewrite_map_loads


def _ld_map(fd: int, source: int = 1) -> bytes:
    """lddw r1, map fd: two instruction slots."""
    return struct.pack("<BBhi", 0x18, 0x01 | (source << 4), 0, fd) + bytes(8)


EXIT = struct.pack("<BBhi", 0x95, 0, 0, 0)


def test_each_map_load_gets_its_new_fd_and_nothing_else_changes() -> None:
    code = _ld_map(7) + EXIT + _ld_map(9) + _ld_map(7)
    out = rewrite_map_loads(code, {7: 0, 9: 1}.__getitem__)
    assert out == _ld_map(0) + EXIT + _ld_map(1) + _ld_map(0)
    assert rewrite_map_loads(out, [40, 41].__getitem__) == _ld_map(40) + EXIT + _ld_map(
        41
    ) + _ld_map(40)


def test_a_plain_64_bit_number_is_left_alone() -> None:
    number = struct.pack("<BBhi", 0x18, 0x01, 0, 7) + struct.pack("<BBhi", 0, 0, 0, 1)
    assert rewrite_map_loads(number, lambda fd: fd + 100) == number


def test_a_load_an_image_cannot_carry_is_refused() -> None:
    with pytest.raises(ValueError, match="kind 2"):
        rewrite_map_loads(_ld_map(3, source=2), lambda fd: fd)


def _image() -> ProgramImage:
    spec = MapSpec(b"counts0", 1, 16, 8, 1024, 0, '"unsigned long long"', '"unsigned long long"')
    return ProgramImage({b"on_cpu_sample": _ld_map(0) + EXIT}, (spec,), b"GPL", 0)


def test_an_image_reads_back_equal() -> None:
    image = _image()
    again = ProgramImage.from_bytes(image.to_bytes())
    assert again == image


@pytest.mark.parametrize("cut", [0, 1, 10, -1])
def test_a_damaged_image_reads_as_none(cut: int) -> None:
    data = _image().to_bytes()
    assert ProgramImage.from_bytes(data[:cut]) is None
    assert ProgramImage.from_bytes(b"not marshal") is None


def test_an_image_of_odd_shape_reads_as_none() -> None:
    image = _image()
    odd = ProgramImage({b"f": b"\x00" * 5}, image.maps, image.license, 0)  # not whole instructions
    assert ProgramImage.from_bytes(odd.to_bytes()) is None
