"""Named Python threads, for tests/symbols/test_python_threads.py and
tests/bpf/test_python_threads.py.

``py_threads.py SECONDS``: starts ``worker-a`` (spinning in ``spin_a``) and
``worker-b`` (in ``spin_b``; its ``__dict__`` made, so its attributes move
from the instance's values array to a dict of its own), prints one JSON
line ``{name: native thread id}`` (MainThread too), then, for each line read
on stdin, starts one more spinning thread named as the line says and prints
the JSON again; it exits after SECONDS.
"""

import json
import sys
import threading
import time


def spin_a() -> None:
    x = 0
    while True:
        x += 1


def spin_b() -> None:
    x = 0
    while True:
        x += 1


def spin_other() -> None:
    x = 0
    while True:
        x += 1


def report() -> None:
    ids = {t.name: t.native_id for t in threading.enumerate()}
    print(json.dumps(ids), flush=True)


def main() -> None:
    end = time.monotonic() + float(sys.argv[1])
    threading.Thread(target=spin_a, name="worker-a", daemon=True).start()
    b = threading.Thread(target=spin_b, name="worker-b", daemon=True)
    b.start()
    vars(b)  # a dict of its own
    threading.Thread(target=_stdin_threads, name="stdin", daemon=True).start()
    report()
    time.sleep(max(0.0, end - time.monotonic()))


def _stdin_threads() -> None:
    for line in sys.stdin:
        threading.Thread(target=spin_other, name=line.strip(), daemon=True).start()
        report()


if __name__ == "__main__":
    main()
