"""Copies of a profile's counts for its snapshots, in arrays reused once no snapshot holds them.

A snapshot's counts are copies: the profile goes on counting while views read
them. At 1.7 M nodes (bench.live --workload scale) that is two 13.6 MB copies
a tick, and a new array that large is mapped afresh (glibc's mmap threshold,
``process_watch.map_large_blocks``) and page-faulted in: 5.8 ms a tick against
1.9 ms for copying into arrays already mapped (measured, numpy, this machine).
So a copy goes into an array of an earlier snapshot that nobody holds any
more. A snapshot holds views of the array, and every view holds its base
array: an array no view holds has only the pool's references.
No Textual here.
"""

from __future__ import annotations

import sys

import numpy as np

from bpftop.tui.model.store import Counts

KEPT = 4
"""Arrays kept for reuse: the two of the snapshot shown, and the two of the one
before it, which the app lets go of once it shows the next."""
_FREE_REFERENCES = 3  # the pool's list, the loop's name, getrefcount's argument


class CountCopies:
    """Where one profile's snapshots get their count arrays (collector thread only)."""

    def __init__(self) -> None:
        self._arrays: list[Counts] = []

    def copy(self, counts: Counts, size: int) -> Counts:
        """``counts[:size]`` as an array nobody else writes (a view of a reused
        one, made with an eighth more room: the profile grows)."""
        for n in range(len(self._arrays)):  # (enumerate's tuple would hold one more)
            array = self._arrays[n]
            if sys.getrefcount(array) == _FREE_REFERENCES:
                if len(array) < size:  # the profile grew: make a bigger one
                    del self._arrays[n]
                    break
                np.copyto(array[:size], counts[:size])
                return array[:size]
        copied = np.empty(size + size // 8, counts.dtype)
        copied[:size] = counts[:size]
        if len(self._arrays) < KEPT:
            self._arrays.append(copied)
        return copied[:size]
