"""Python functions made and freed all the time, for tests/bpf/test_python_churn.py.

``py_churn.py SECONDS BUSY_MS KEEP``: prints ``ready``, then for SECONDS
(or until stdin closes) compiles the source of a new function ``gen_N`` from the file name
``<gen-N>`` (N counts up from 0; the function's lines are 1 to LINES), runs
it for BUSY_MS of thread CPU time and keeps it until KEEP newer ones have
run (0: drops it at once), so its code object is freed and a later one is
usually made at its address. Then prints one JSON line:
``gens`` (functions run), ``addresses`` (distinct code object addresses
among them) and ``busy_ms``. Every gen_N starts at line 1 and has the same
shape: only its name and its file name tell it from the others.
"""

import collections
import json
import sys
import threading
import time
from typing import Any

LINES = 6
SOURCE = """def gen_{n}(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        x += 1
    return x
"""


def churn(seconds: float, busy_s: float, keep: int) -> tuple[int, int]:
    addresses: set[int] = set()
    kept: collections.deque[object] = collections.deque(maxlen=keep or None)
    n = 0
    end = time.monotonic() + seconds
    stdin_open = threading.Thread(target=sys.stdin.read, daemon=True)
    stdin_open.start()
    while time.monotonic() < end and stdin_open.is_alive():
        module = compile(SOURCE.format(n=n), f"<gen-{n}>", "exec")
        space: dict[str, Any] = {"thread_time": time.thread_time}
        exec(module, space)
        # Popped, so no cycle (function -> globals -> function) keeps it alive.
        function = space.pop(f"gen_{n}")
        addresses.add(id(function.__code__))
        function(busy_s)
        if keep:
            kept.append(function)  # the oldest kept one is dropped
        del function, module, space
        n += 1
    return n, len(addresses)


def main() -> None:
    seconds, busy_ms, keep = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    print("ready", flush=True)
    gens, addresses = churn(seconds, busy_ms / 1000, keep)
    print(json.dumps({"gens": gens, "addresses": addresses, "busy_ms": busy_ms}), flush=True)


if __name__ == "__main__":
    main()
