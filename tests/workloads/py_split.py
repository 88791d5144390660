"""A Python workload with known shapes, for tests/bpf/test_python.py.

``py_split.py split SECONDS``: main -> run -> hot_a (70% of CPU time) / hot_b (30%).
``py_split.py threads SECONDS``: two threads, each spinning in its own function
(``spin_left`` / ``spin_right``); prints each thread's native id.
``py_split.py gil SECONDS``: two threads, ``spin_left`` in Python code (holding
the GIL) and ``hash_right`` hashing 1 MiB blocks (hashlib lets go of the GIL
while it hashes); prints each thread's native id.
``py_split.py deep SECONDS DEPTH``: ``recurse`` DEPTH frames deep, then spins.
``py_split.py children SECONDS``: two ``multiprocessing`` children (forked) spin
in ``spin_right`` for SECONDS, then sleep SECONDS + 2 s (alive, so their code
objects can still be read), while the parent spins in ``spin_left`` for half that.
``py_split.py count SECONDS``: on a line from stdin, spins, then prints loop turns
per second (bench/python.py).
Time is thread CPU time, so the split holds on a loaded machine. The first
line printed maps each function's name to its code object's address.
"""

import hashlib
import json
import multiprocessing
import random
import sys
import threading
import time
from collections.abc import Callable

SLICE_S = 0.01


def burn(seconds: float) -> int:
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


def hot_a(slice_s: float) -> int:
    return burn(0.7 * slice_s)


def hot_b(slice_s: float) -> int:
    return burn(0.3 * slice_s)


def run(seconds: float) -> None:
    # Slices of random length: a fixed one would beat against the sampling period.
    slices = random.Random(17)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        slice_s = slices.uniform(0.5, 1.5) * SLICE_S
        hot_a(slice_s)
        hot_b(slice_s)


def spin_left(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        burn(SLICE_S)


def spin_right(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        burn(SLICE_S)


def hash_right(seconds: float) -> None:
    block = bytes(1 << 20)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hashlib.sha256(block).digest()


def threads(seconds: float, right: Callable[[float], None] = spin_right) -> None:
    workers = [threading.Thread(target=f, args=(seconds,)) for f in (spin_left, right)]
    for worker in workers:
        worker.start()
    time.sleep(0.2)
    print(" ".join(str(w.native_id) for w in workers), flush=True)
    for worker in workers:
        worker.join()


def spin_then_sleep(seconds: float) -> None:
    spin_right(seconds)
    time.sleep(seconds + 2)


def children(seconds: float) -> None:
    forked = multiprocessing.get_context("fork")
    workers = [forked.Process(target=spin_then_sleep, args=(seconds,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    spin_left(seconds / 2)
    for worker in workers:
        worker.join()


def recurse(depth: int, seconds: float) -> None:
    if depth <= 1:
        return spin_left(seconds)
    return recurse(depth - 1, seconds)


def main() -> None:
    mode, seconds = sys.argv[1], float(sys.argv[2])
    functions = (main, run, hot_a, hot_b, burn, threads, spin_left, spin_right, recurse)
    # id() of a code object is its address: what the kernel records per frame.
    print(json.dumps({f.__name__: id(f.__code__) for f in functions}), flush=True)
    if mode == "split":
        run(seconds)
    elif mode == "threads":
        threads(seconds)
    elif mode == "gil":
        threads(seconds, hash_right)
    elif mode == "children":
        children(seconds)
    elif mode == "deep":
        recurse(int(sys.argv[3]), seconds)
    elif mode == "count":
        count(seconds)


def count(seconds: float) -> None:
    """Once a line arrives on stdin, work for ``seconds`` of wall time; print loop
    turns per wall and per CPU second."""
    sys.stdin.readline()
    turns, start_wall, start_cpu = 0, time.monotonic(), time.thread_time()
    while time.monotonic() - start_wall < seconds:
        turns += burn(SLICE_S)
    wall, cpu = time.monotonic() - start_wall, time.thread_time() - start_cpu
    print(json.dumps({"per_wall_s": turns / wall, "per_cpu_s": turns / cpu}), flush=True)


if __name__ == "__main__":
    main()
