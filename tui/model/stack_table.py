"""Remembered stacks as rows: where each one's node ids and function ids are.

The profile remembers every distinct stack once; a tick's counts are then
applied with one scatter-add per counter array over ids gathered here in a
handful of vectorized operations. No Textual here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from bpftop.tui.model.store import Counts, Ids


class StackTable:
    """Remembered stacks as rows: where each one's node ids and function ids are.

    The ids of all stacks sit one after another in two growing arrays, so the
    stacks of a tick are gathered with a handful of vectorized operations
    instead of a Python object each.
    """

    def __init__(self) -> None:
        self.size = 0
        self._rows: npt.NDArray[np.int64] = np.zeros((1024, 6), np.int64)
        self._nodes = _Runs()
        self._functions = _Runs()

    def add(
        self, nodes: Ids, node_lengths: Counts, functions: Ids, function_lengths: Counts,
        leaf_functions: Counts,
    ) -> int:  # fmt: skip
        """Stacks one after another: each one's node ids (root first, runs of
        ``node_lengths``), its functions (each once, runs of ``function_lengths``)
        and its leaf's function (-1: none); returns the first one's row."""
        first, end = self.size, self.size + len(node_lengths)
        if end > len(self._rows):
            grown = np.zeros((max(end, 2 * len(self._rows)), 6), np.int64)
            grown[:first] = self._rows[:first]
            self._rows = grown
        rows = self._rows[first:end]
        rows[:, 0] = self._nodes.append(nodes) + np.cumsum(node_lengths) - node_lengths
        rows[:, 1] = node_lengths
        rows[:, 2] = self._functions.append(functions) + np.cumsum(function_lengths)
        rows[:, 2] -= function_lengths
        rows[:, 3] = function_lengths
        rows[:, 4] = nodes[np.cumsum(node_lengths) - 1]
        rows[:, 5] = leaf_functions
        self.size = end
        return first

    def gather(self, rows: Counts, counts: Counts) -> Gathered:
        """Where ``counts`` samples of each stack of ``rows`` go."""
        table = self._rows[rows]
        node_lengths, function_lengths = table[:, 1], table[:, 3]
        framed = table[:, 5] >= 0
        return Gathered(
            self._nodes.gather(table[:, 0], node_lengths), np.repeat(counts, node_lengths),
            self._functions.gather(table[:, 2], function_lengths),
            np.repeat(counts, function_lengths),
            table[:, 4], table[framed, 5], counts[framed],
        )  # fmt: skip


class Gathered(NamedTuple):
    """Ids to add to and what to add: the shape of one scatter-add per counter."""

    nodes: Ids
    node_counts: Counts
    functions: Ids
    function_counts: Counts
    leaves: Counts
    leaf_functions: Counts
    leaf_function_counts: Counts


class _Runs:
    """Runs of ids in one growing array."""

    def __init__(self) -> None:
        self._ids: Ids = np.zeros(4096, np.int32)
        self.size = 0

    def append(self, ids: Ids) -> int:
        """Store ids after the last; returns where they start."""
        start, end = self.size, self.size + len(ids)
        if end > len(self._ids):
            grown = np.zeros(max(end, 2 * len(self._ids)), np.int32)
            grown[:start] = self._ids[:start]
            self._ids = grown
        self._ids[start:end] = ids
        self.size = end
        return start

    def gather(self, starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]) -> Ids:
        """The runs at ``starts`` (of ``lengths``) one after another."""
        ends = np.cumsum(lengths)
        shift = np.repeat(starts - (ends - lengths), lengths)
        return self._ids[shift + np.arange(int(ends[-1]) if len(ends) else 0)]
