"""How bpftop runs Python's cyclic garbage collector (live, ``record``, ``view``, ``diff``).

Owns :func:`gc_paused` (no cyclic collection while bpftop starts) and
:func:`tune_gc`; the numbers in its docstring are measured by
``bench/tui_bench.py`` (``--gc-tune``).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

GC_THRESHOLDS = (700, 10, 1_000)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection from launch until :func:`tune_gc` (or the end). The
    imports before the live view's first frame make ~50,000 objects and no
    garbage: collections only scanned them again and again (~0.03 s); a full
    collection before freezing them found nothing and took 0.025 s more."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def tune_gc() -> None:
    """Keep the cyclic garbage collector's pauses short.

    The profile lives in numpy arrays, but the remembered stacks and their
    frames are many small objects, and full collections over them paused
    ticks for up to seconds (bench.tui_bench without this: key p99 1.7 s).
    What exists now is never scanned again (``gc.freeze``) and full
    collections are rare (1,000 older-generation ones apart). The young
    generations keep Python's default sizes: the GC's CPU per tick is the
    same (~1 ms a tick in bench.tui_bench) at any young threshold, but a
    young collection every 20,000 objects paused a key press or a tick for
    up to 16 ms, and every 5,000 let one middle-generation collection take
    105 ms; at 700 and 10, pauses stay under ~5 ms. Collection resumes here
    (:func:`gc_paused`).
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()
