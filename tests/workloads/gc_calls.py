"""Python garbage collections with a known count, for usdt:python3.X:python:gc__done.

Turns automatic collection off, waits for one byte on stdin (so a probe can be
attached first), runs gc.collect() N times, prints "collections=T" (every
collection this interpreter ran, startup included: gc.get_stats()) and waits
for stdin to close. It ends with os._exit, so no collection runs at exit.
Usage: python3.X gc_calls.py N [go]   ("go": do not wait for stdin)
"""

import gc
import os
import sys

gc.disable()
n = int(sys.argv[1])
wait = sys.argv[2:] != ["go"]
if wait and not sys.stdin.buffer.read(1):
    os._exit(1)
for _ in range(n):
    gc.collect()
total = sum(generation["collections"] for generation in gc.get_stats())
sys.stdout.write(f"collections={total}\n")
sys.stdout.flush()
while wait and sys.stdin.buffer.read(1):
    pass
os._exit(0)
