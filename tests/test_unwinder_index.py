"""The walker's per-file row index (bpf/unwinder.py row_index): for every
address, the row in force lies between the entries of its bucket and the next,
exactly as bpf/unwind.bpf.c's unwind_narrow computes the bucket."""

from __future__ import annotations

import bisect
import random
import struct

from bpftop.bpf.unwinder import ROWS_PER_BUCKET, row_index


def _packed(pcs: list[int]) -> bytes:
    return b"".join(struct.pack("<IihhBB2x", pc, 8, 0, -8, 1, 0) for pc in pcs)


def _bucket(vaddr: int, first_pc: int, shift: int, buckets: int) -> int:
    """unwind_narrow's bucket of vaddr (clamped to the last bucket)."""
    bucket = (vaddr - first_pc) >> shift if vaddr > first_pc else 0
    return min(bucket, buckets - 1)


def _check(pcs: list[int]) -> None:
    index = row_index(_packed(pcs))
    assert 1 <= index.buckets <= max(1, len(pcs) // ROWS_PER_BUCKET)
    assert list(index.rows) == sorted(index.rows) and index.rows[-1] <= len(pcs) - 1
    for vaddr in range(pcs[0] - 3, pcs[-1] + 40):
        bucket = _bucket(vaddr, index.first_pc, index.shift, index.buckets)
        lo, hi = index.rows[bucket], index.rows[bucket + 1]
        in_force = bisect.bisect_right(pcs, vaddr) - 1
        if in_force < 0:  # before the first row: the search must land on row 0
            assert lo == 0
        else:
            assert lo <= in_force <= hi, (vaddr, bucket, lo, in_force, hi)


def test_every_address_finds_its_row_within_its_bucket() -> None:
    rng = random.Random(7)
    for rows in (1, 2, 3, 4, 5, 17, 64, 1000):
        pcs = sorted(rng.sample(range(0x1000, 0x1000 + 40 * rows), rows))
        _check(pcs)


def test_uneven_code_a_huge_function_among_small_ones() -> None:
    pcs = (
        [0x2000 + 4 * i for i in range(200)]
        + [0x9000, 0x40000]
        + [0x40010 + 2 * i for i in range(50)]
    )
    _check(pcs)
