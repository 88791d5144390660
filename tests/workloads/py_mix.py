"""Six Python functions with known self time, for tests/bpf/test_python_pyspy.py.

``py_mix.py SECONDS``: prints ``ready``, then for SECONDS runs rounds of
main -> run -> w30, w22, w17, w13, w10, w8: each spins in its own loop (no
call below it but ``range``'s C code) for its number's share of the round's
loop turns, so its self time is that share of the CPU time. Rounds last
~20-60 ms (~24 ns a turn here), many sampling periods, so a periodic
sampler's error stays within a sample per function and round instead of a
random sampler's; their random lengths keep them from beating against the
period.
"""

import random
import sys
import time

TURNS = 17_000  # per percent of a round, on average: ~40 ms rounds

# The six functions are written out, not generated: each has its own code
# object, name and source lines in this file, as a program's functions do,
# which is what py-spy and bpftop are compared on.


def w30(turns: int) -> int:
    x = 0
    for i in range(turns * 30):
        x += i
    return x


def w22(turns: int) -> int:
    x = 0
    for i in range(turns * 22):
        x += i
    return x


def w17(turns: int) -> int:
    x = 0
    for i in range(turns * 17):
        x += i
    return x


def w13(turns: int) -> int:
    x = 0
    for i in range(turns * 13):
        x += i
    return x


def w10(turns: int) -> int:
    x = 0
    for i in range(turns * 10):
        x += i
    return x


def w8(turns: int) -> int:
    x = 0
    for i in range(turns * 8):
        x += i
    return x


def run(seconds: float) -> None:
    rounds = random.Random(17)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        turns = int(rounds.uniform(0.5, 1.5) * TURNS)
        for work in (w30, w22, w17, w13, w10, w8):
            work(turns)


def main() -> None:
    print("ready", flush=True)
    run(float(sys.argv[1]))


if __name__ == "__main__":
    main()
