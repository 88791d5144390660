"""Reading each image of a target that execs, while it runs.

Owns :class:`ImageWatch`. Told of a target's exec (by the exec thread, within
milliseconds), it reads the new image's maps at once and again a few times
while the dynamic loader maps its libraries (``RECHECK_S``), into the
symbolizer's :class:`~bpftop.symbols.proc.images.ImageStore`. A read counts only
when the process ran the same image before and after it, so an image that
lived 50 ms is still named after its successors replaced it.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable

from bpftop.symbols.proc.images import ImageStore, read_image

RECHECK_S = (0.002, 0.005, 0.02, 0.1, 0.5)
"""When an image is read again after its exec (its libraries are mapped by then),
as long as it still runs: a read that fails (gone, or exec'd again) ends them."""


class ImageWatch:
    """Reads the targets' images into ``store``; ``image_of(tgid)``: the image running."""

    def __init__(
        self,
        store: ImageStore,
        image_of: Callable[[int], int],
        reread: Callable[[int], object] = lambda _tgid: None,
    ) -> None:
        """``reread(tgid)``: called after each later read of a running image
        (the walker's description of it may lack its libraries too)."""
        self._store = store
        self._image_of = image_of
        self._reread = reread
        self._due: list[tuple[float, int, int]] = []  # (when, tgid, RECHECK_S step)
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="bpftop-images", daemon=True)

    def capture(self, tgid: int) -> bool:
        """Read ``tgid``'s running image now (any thread); False if it changed or went."""
        before = self._image_of(tgid)
        maps = read_image(tgid)
        if maps is None or self._image_of(tgid) != before:
            return False
        self._store.put(tgid, before, maps)
        return True

    def exec_seen(self, tgid: int) -> None:
        """``tgid`` exec'd: read its new image now and again at ``RECHECK_S``."""
        if not self.capture(tgid):
            return
        self._schedule(tgid, 0)

    def _schedule(self, tgid: int, step: int) -> None:
        """Read ``tgid`` again at ``RECHECK_S[step]`` after now (none left: not)."""
        if step >= len(RECHECK_S):
            return
        due = time.monotonic() + RECHECK_S[step] - (RECHECK_S[step - 1] if step else 0.0)
        with self._cond:
            if self._closed:
                return
            heapq.heappush(self._due, (due, tgid, step))
            if self._thread.ident is None:
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._due or self._due[0][0] > time.monotonic()):
                    wait = self._due[0][0] - time.monotonic() if self._due else None
                    self._cond.wait(wait)
                if self._closed:
                    return
                _, tgid, step = heapq.heappop(self._due)
            if self.capture(tgid):
                self._reread(tgid)
                self._schedule(tgid, step + 1)
