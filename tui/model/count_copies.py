"""Copies of a profile's counts for its snapshots, in arrays reused once no snapshot holds them.

A snapshot's counts are copies: the profile goes on counting while views read
them. At 1.7 M nodes (bench.live --workload scale) that is two 13.6 MB copies
a tick, and a new array that large is mapped afresh (glibc's mmap threshold,
``process_watch.map_large_blocks``) and page-faulted in: 5.8 ms a tick against
1.9 ms for copying into arrays already mapped (measured, numpy, this machine).
So a copy goes into an array of an earlier snapshot that nobody holds any
more. A snapshot holds views of the array, and every view holds its base
array: an array no view holds has only the pool's references.

A reused array is a tick or two behind. A tick changes the self counts of
few nodes (its stacks' leaves: ~1,000 at scale, of 1.7 M nodes): when told
each change (``changed``), a copy writes only the nodes changed since that
array was last written, and the nodes made since. Totals change all along
those stacks' paths (~70,000 distinct nodes in two ticks at scale, scattered):
writing just those took as long as the whole copy (numpy, this machine), so
their copies are whole.
No Textual here.
"""

from __future__ import annotations

import sys

import numpy as np

from bpftop.tui.model.store import Counts, Ids

KEPT = 2
"""Arrays kept for reuse: the one of the snapshot shown, and the one of the
snapshot before it, which the app lets go of once it shows the next."""
_FREE_REFERENCES = 3  # the pool's list, the loop's name, getrefcount's argument


class CountCopies:
    """Where one count array's snapshots get their copies (collector thread only).

    ``tracked``: the owner calls :meth:`changed` (or :meth:`all_changed`) for
    every change of the counts between two copies; untracked, every copy is whole.
    """

    def __init__(self, *, tracked: bool = False) -> None:
        self._arrays: list[Counts] = []
        self._written: list[tuple[int, int]] = []  # per array: (version, size) when written
        self._tracked = tracked
        self._log: list[Ids] = []  # nodes changed, one entry a version from _base on
        self._base = 0
        self._logged = 0  # node ids in the log

    @property
    def _version(self) -> int:  # changes told so far
        return self._base + len(self._log)

    def changed(self, nodes: Ids) -> None:
        """The counts of ``nodes`` (repeats allowed) changed."""
        if not self._tracked or not self._arrays:
            return  # no array to bring up to date
        self._log.append(nodes)
        self._logged += len(nodes)
        if self._logged > len(self._arrays[0]) // 2:  # as many as whole copies write
            self.all_changed()

    def all_changed(self) -> None:
        """Every count may have changed: arrays written before get whole copies."""
        self._base = self._version + 1
        self._log, self._logged = [], 0

    def copy(self, counts: Counts, size: int) -> Counts:
        """``counts[:size]`` as an array nobody else writes (a view of a reused
        one, made as long as ``counts``, the profile's room to grow, and an
        eighth longer than ``size`` at least: pages not written yet are not
        resident, and the array lasts until the profile's arrays grow)."""
        for n in range(len(self._arrays)):  # (enumerate's tuple would hold one more)
            array = self._arrays[n]
            if sys.getrefcount(array) == _FREE_REFERENCES:
                if len(array) < size:  # the profile grew: make a bigger one
                    del self._arrays[n], self._written[n]
                    break
                self._bring_up(array, n, counts, size)
                return array[:size]
        copied = np.empty(max(len(counts), size + size // 8), counts.dtype)
        copied[:size] = counts[:size]
        if len(self._arrays) < KEPT:
            self._arrays.append(copied)
            self._written.append((self._version, size))
        return copied[:size]

    def _bring_up(self, array: Counts, n: int, counts: Counts, size: int) -> None:
        """Write ``counts[:size]`` into pooled ``array`` (number ``n``): what
        changed since it was written, or all of it."""
        version, written = self._written[n]
        if self._tracked and version >= self._base and written <= size:
            array[written:size] = counts[written:size]  # made since
            since = self._log[version - self._base :]
            if since:
                at = np.concatenate(since)
                array[at] = counts[at]
        else:
            np.copyto(array[:size], counts[:size])
        self._written[n] = (self._version, size)
        oldest = min((v for v, _ in self._written if v >= self._base), default=self._version)
        del self._log[: oldest - self._base]  # older changes: no array needs them
        self._base = oldest
        self._logged = sum(map(len, self._log))
