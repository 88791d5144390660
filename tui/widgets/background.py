"""Pure computations over immutable snapshots, off the app thread.

Owns :class:`Background`: one worker thread for one kind of job (the
filtered tree, the callers tree). ``submit`` waits a few milliseconds, so a
small profile answers at once; past that the caller keeps showing what it
had and ``on_done`` delivers the result on the app thread later. While a job
runs, newer requests replace each other: only the latest one runs next.
Snapshot trees are immutable, so jobs may read them from any thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Generic, TypeVar

from textual.app import App

T = TypeVar("T")

SYNC_WAIT_S = 0.03
"""How long the app thread waits for a job before taking its result later."""

Job = tuple[Hashable, Callable[[], T], Callable[[T], None]]


class Background(Generic[T]):
    """One worker thread; ``key`` names what a job computes (no double work)."""

    def __init__(self, app: App[None], name: str, sync_wait_s: float = SYNC_WAIT_S) -> None:
        self.app = app
        self.sync_wait_s = sync_wait_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"bpftop-{name}")
        self._running: Hashable | None = None
        self._app_thread = threading.get_ident()
        self._next: Job[T] | None = None

    @property
    def busy(self) -> bool:
        return self._running is not None

    def submit(self, key: Hashable, job: Callable[[], T], on_done: Callable[[T], None]) -> T | None:
        """The result if it came within the wait; else None and ``on_done`` later."""
        if self._running is not None:
            if key != self._running:
                self._next = (key, job, on_done)
            return None
        self._app_thread = threading.get_ident()
        future = self._pool.submit(job)
        if self.sync_wait_s > 0:
            with contextlib.suppress(FutureTimeout):
                return future.result(timeout=self.sync_wait_s)
        self._running = key
        future.add_done_callback(lambda done: self._from_worker(done, on_done))
        return None

    def _from_worker(self, future: Future[T], on_done: Callable[[T], None]) -> None:
        """Hand the result to the app thread. Usually called on the worker; on
        the app thread when the job was done before this callback was added."""
        if future.cancelled() or future.exception() is not None:
            result: T | None = None
        else:
            result = future.result()
        if threading.get_ident() == self._app_thread:
            self.app.call_later(self._finished, result, on_done)
            return
        with contextlib.suppress(RuntimeError):  # the app is gone
            self.app.call_from_thread(self._finished, result, on_done)

    def _finished(self, result: T | None, on_done: Callable[[T], None]) -> None:
        self._running = None
        queued, self._next = self._next, None
        if result is not None:
            on_done(result)
        if queued is not None:
            found = self.submit(*queued)
            if found is not None:
                queued[2](found)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
