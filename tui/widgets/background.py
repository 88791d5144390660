"""Pure computations over immutable snapshots, off the app thread.

Owns :class:`Background`: one worker thread for one kind of job (the
filtered tree, the callers tree). ``submit`` waits a few milliseconds, so a
small profile answers at once; past that the caller keeps showing what it
had and ``on_done`` delivers the result on the app thread later. While a job
runs, newer requests replace each other: only the latest one runs next.
Snapshot trees are immutable, so jobs may read them from any thread. A job
that raises is a bug: its traceback goes to the log and a notification says
the view was not updated.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Generic, TypeVar

from textual.app import App

from bpftop.base.crash_log import log_exception

T = TypeVar("T")

SYNC_WAIT_S = 0.03
"""How long the app thread waits for a job before taking its result later."""

Job = tuple[Hashable, Callable[[], T], Callable[[T], None]]


class Background(Generic[T]):
    """One worker thread; ``key`` names what a job computes (no double work)."""

    def __init__(self, app: App[None], name: str, sync_wait_s: float = SYNC_WAIT_S) -> None:
        self.app = app
        self.name = name
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
                error = future.exception(timeout=self.sync_wait_s)
                if error is None:
                    return future.result()
                self._report(error)
                return None
        self._running = key
        future.add_done_callback(lambda done: self._from_worker(done, on_done))
        return None

    def _from_worker(self, future: Future[T], on_done: Callable[[T], None]) -> None:
        """Hand the result to the app thread. Usually called on the worker; on
        the app thread when the job was done before this callback was added."""
        error = None if future.cancelled() else future.exception()
        result: T | None = None
        if error is not None:
            self._report(error)
        elif not future.cancelled():
            result = future.result()
        if threading.get_ident() == self._app_thread:
            self.app.call_later(self._finished, result, on_done)
            return
        with contextlib.suppress(RuntimeError):  # the app is gone
            self.app.call_from_thread(self._finished, result, on_done)

    def _report(self, error: BaseException) -> None:
        """A job raised (a bug of ours): log the traceback, and say on screen that
        the view shows what it had before (it would otherwise look current)."""
        where = log_exception(f"background job {self.name}", error)
        message = f"{self.name} job failed, the view is not up to date: {error!r} ({where})"
        if threading.get_ident() == self._app_thread:
            self.app.notify(message, title="internal error", severity="error", markup=False)
            return
        with contextlib.suppress(RuntimeError):  # the app is gone
            self.app.call_from_thread(
                self.app.notify, message, title="internal error", severity="error", markup=False
            )

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
