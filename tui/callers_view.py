"""The Callers view: the bottom-up tree of the selected function.

Building it walks the whole call tree, which at profiler scale takes longer
than a frame. Snapshot trees are immutable, so builds run in a worker thread:
the app waits for at most ``SYNC_WAIT_S``; past that the view keeps showing
the previous result (marked as updating) until the new one arrives. While a
build runs, newer requests replace each other: only the latest one runs next.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from bpftop.tui.calltree_view import CallTreeView
from bpftop.tui.model.snapshot import CallNode
from bpftop.tui.model.views import Match, NodeKey, callers_tree

SYNC_WAIT_S = 0.03
"""How long the app thread waits for a build before showing it later."""

Built = tuple[CallNode, NodeKey, CallNode, float]


def build(tree: CallNode, key: NodeKey, expected: int | None) -> Built:
    started = time.perf_counter()
    result = callers_tree(tree, key, expected)
    return tree, key, result, time.perf_counter() - started


class CallersView(CallTreeView):
    """A call-tree view of ``callers_tree(tree, key)``, rebuilt as snapshots arrive."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.open_depth = 3
        self.last_cost_s = 0.0
        self.updating = False
        self.async_builds = 0
        self.sync_wait_s = SYNC_WAIT_S
        self._built_for: tuple[CallNode, NodeKey] | None = None
        self._wanted: NodeKey | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bpftop-callers")
        self._in_flight: Future[Built] | None = None
        self._next: tuple[CallNode, NodeKey, int | None] | None = None

    def show_callers(
        self,
        tree: CallNode,
        key: NodeKey | None,
        match: Match | None,
        show_source: bool,
        expected: int | None = None,
    ) -> None:
        """Show the callers of ``key`` in ``tree`` (now, or when the worker is done).

        ``expected``, the function's total samples if known, lets the build stop early.
        """
        self.set_options(match=match, show_source=show_source)
        self._wanted = key
        if key is None:
            self.set_placeholder("select a function in another view first (Tab, 1-4)")
            self._built_for = None
            self.set_tree(CallNode("callers"))
            return
        built = self._built_for
        if built is not None and built[0] is tree and built[1] == key:
            return
        if self._in_flight is not None:
            self._next = (tree, key, expected)  # runs when the current build is done
            return
        self._submit(tree, key, expected)

    def _submit(self, tree: CallNode, key: NodeKey, expected: int | None) -> None:
        future = self._pool.submit(build, tree, key, expected)
        if self.sync_wait_s > 0:
            try:
                self._apply(future.result(timeout=self.sync_wait_s))
                return
            except FutureTimeout:
                pass
        self.updating = True
        self.async_builds += 1
        self._in_flight = future
        future.add_done_callback(self._done_in_worker)

    def _done_in_worker(self, future: Future[Built]) -> None:
        """Called on the worker thread: hand the result to the app thread."""
        if future.cancelled() or future.exception() is not None:
            return
        with contextlib.suppress(RuntimeError):  # the app is gone
            self.app.call_from_thread(self._finished, future.result())

    def _finished(self, built: Built) -> None:
        self._in_flight = None
        self._apply(built)
        queued, self._next = self._next, None
        if queued is not None:
            self.show_callers(queued[0], queued[1], self.match, self.show_source, queued[2])

    def on_unmount(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _apply(self, built: Built) -> None:
        tree, key, result, cost = built
        self.last_cost_s = cost
        if key != self._wanted:
            return
        self.updating = False
        self._built_for = (tree, key)
        self.set_placeholder(f"no samples of {key[0]}")
        first = self.cursor_path is None or self.cursor_path[0] != key
        self.set_tree(result)
        if result.children and first:
            self.reveal((result.children[0].key,))
