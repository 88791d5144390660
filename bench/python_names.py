"""Cost of naming a Python frame in user space: a new code object, and one seen before.

    sudo .venv/bin/python -m bench.python_names [--functions 2000] [--rounds 3]

A python3.11 process compiles FUNCTIONS distinct functions (each its own
qualified name, file name and a few lines, so each has its own strings and
location table) and prints, per function, what the kernel records for its
code object: the address and the identity's parts (co_firstlineno, the
addresses of co_filename and co_qualname, co_qualname's hash; CPython's id()
is the address). The bench then names each code object as the collector does
(``CodeNames.frame``): the first time (read from /proc/PID/mem, validated,
strings and location table decoded) and again (the cache, the line looked up
in the cached table). Per round a fresh ``CodeNames``; medians in µs of CPU per frame
(thread CPU time: the machine is shared).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from bpftop.symbols.python.code import MASK64, CodeNames, code_ident
from bpftop.symbols.python.runtime import PythonRuntime, find_python

PYTHON = "/usr/bin/python3.11"
TARGET = r"""
import sys
n = int(sys.argv[1])
keep = []
for i in range(n):
    source = f"def f_{i}(x):\n    y = x + {i}\n    return y * 2\n"
    space = {}
    exec(compile(source, f"/bench/gen_{i}.py", "exec"), space)
    code = space[f"f_{i}"].__code__
    keep.append(code)
    print(id(code), code.co_firstlineno, id(code.co_filename), id(code.co_qualname),
          hash(code.co_qualname))
print("ready", flush=True)
sys.stdin.read()
"""


def _codes(proc: subprocess.Popen[str]) -> list[tuple[int, int]]:
    """(code address, identity) per function, as the kernel would record them."""
    assert proc.stdout is not None
    codes: list[tuple[int, int]] = []
    for line in proc.stdout:
        if line.startswith("ready"):
            return codes
        addr, first, filename, qualname, qualhash = map(int, line.split())
        codes.append((addr, code_ident(first, filename, qualname, qualhash & MASK64)))
    raise RuntimeError("the target ended early")


def _round(pid: int, runtime: PythonRuntime, codes: list[tuple[int, int]]) -> tuple[float, float]:
    """(µs per first naming, µs per repeated naming) over ``codes``."""
    names = CodeNames(pid, runtime.code_type)
    start = time.thread_time()
    first = [names.frame(addr, 2, ident) for addr, ident in codes]
    cold = time.thread_time() - start
    start = time.thread_time()
    again = [names.frame(addr, 2, ident) for addr, ident in codes]
    warm = time.thread_time() - start
    unnamed = sum(frame.reason is not None for frame in first)
    assert not unnamed and first == again, f"{unnamed} of {len(first)} code objects unnamed"
    return 1e6 * cold / len(codes), 1e6 * warm / len(codes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--functions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    proc = subprocess.Popen(
        [PYTHON, "-c", TARGET, str(args.functions)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        codes = _codes(proc)
        runtime = find_python(proc.pid)
        assert isinstance(runtime, PythonRuntime), runtime
        rounds = [_round(proc.pid, runtime, codes) for _ in range(args.rounds)]
    finally:
        proc.kill()
        proc.wait()
    cold = statistics.median(r[0] for r in rounds)
    warm = statistics.median(r[1] for r in rounds)
    print(f"{len(codes)} code objects, median of {args.rounds} rounds:")
    print(f"  a new code object (read, validated, decoded): {cold:6.1f} µs per frame")
    print(f"  a code object seen before (cache, line):      {warm:6.1f} µs per frame")


if __name__ == "__main__":
    main()
