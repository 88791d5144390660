"""A Python workload that blocks with known shapes, for tests/bpf/test_python_offcpu.py.

``py_block.py sleep SECONDS``: main -> run -> a (sleeps 3 units) / b (1 unit),
in turn, for SECONDS: off-CPU time splits 3:1 between a and b; a unit is
10 ms, or the optional third argument (bench/python.py: many short blocks).
``py_block.py write SECONDS``: main -> run -> write_a (3 writes to /dev/null
per turn) / write_b (1 write), for SECONDS.
``py_block.py idle SECONDS``: a pool thread waits in ``queue.get`` (idle in
py-spy's sense: innermost frame threading.py's ``wait``; 50 ms at a time)
while the main thread blocks in ``work`` (10 ms sleeps, the stand-in for real
blocking work), for SECONDS.
Prints one line (``ready``) once it runs.
"""

import contextlib
import os
import queue
import sys
import threading
import time

UNIT_S = 0.01


def a() -> None:
    time.sleep(3 * UNIT_S)


def b() -> None:
    time.sleep(UNIT_S)


def write_a(fd: int) -> None:
    for _ in range(3):
        os.write(fd, b"x")


def write_b(fd: int) -> None:
    os.write(fd, b"x")


def run(mode: str, seconds: float) -> None:
    end = time.monotonic() + seconds
    if mode == "sleep":
        while time.monotonic() < end:
            a()
            b()
    elif mode == "write":
        fd = os.open("/dev/null", os.O_WRONLY)
        while time.monotonic() < end:
            write_a(fd)
            write_b(fd)
            time.sleep(0.001)
    else:
        idle(end)


def pool_worker(jobs: "queue.Queue[None]", end: float) -> None:
    while time.monotonic() < end:
        with contextlib.suppress(queue.Empty):
            jobs.get(timeout=5 * UNIT_S)  # wakes up now and then: offcpu counts at wake-up


def work(end: float) -> None:
    while time.monotonic() < end:
        time.sleep(UNIT_S)


def idle(end: float) -> None:
    jobs: queue.Queue[None] = queue.Queue()
    worker = threading.Thread(target=pool_worker, args=(jobs, end), name="pool")
    worker.start()
    work(end)
    jobs.put(None)
    worker.join()


def main() -> None:
    global UNIT_S
    mode, seconds = sys.argv[1], float(sys.argv[2])
    if len(sys.argv) > 3:
        UNIT_S = float(sys.argv[3])
    print("ready", flush=True)
    run(mode, seconds)


if __name__ == "__main__":
    main()
