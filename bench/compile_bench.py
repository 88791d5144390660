"""Compile benchmark: how long BCC takes to compile and load bpftop's program.

    .venv/bin/python -m bench.compile_bench [ROUNDS]      (root; default 3 rounds)

Each round compiles, in turn, with the flags and headers ``CpuSampler.load``
uses (fallback headers included): ``trivial``, a one-handler reference program
(what any BCC tool pays); ``program``, bpftop's whole program (the walker
appended: ``--unwind auto``, the default); ``no-walker``, the program as
``--unwind fp`` compiles it (the walker's hook stubbed out); and
``+perf-include``, the whole program with ``#include
<uapi/linux/bpf_perf_event.h>`` put back in front (what it cost before the
program defined ``struct bpf_perf_event_data`` itself), and ``+debug-info``,
the whole program without ``-g0`` (with the BTF BCC asks for; see
bpftop.bpf.program_text.compiler_flags). After each compile,
every program in it is loaded (verified) and that is timed apart. Rounds are
interleaved so that a busy machine slows every variant alike; the medians are
printed at the end. Compiles are also timed in CPU seconds of this process
(``time.process_time``: one thread compiles), which other work on a shared
machine inflates far less than wall time.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bpftop.bpf.attach import COMPILED_HANDLERS
from bpftop.bpf.environment import choose_headers, import_bcc, kernel_source
from bpftop.bpf.kallsyms_stub import kallsyms_stub
from bpftop.bpf.program import CpuSampler

TRIVIAL = """
BPF_HASH(hits, u32, u64, 16);
int on_cpu_sample(struct pt_regs *ctx) {
    u32 key = 0;
    u64 zero = 0, *n = hits.lookup_or_try_init(&key, &zero);
    if (n)
        __sync_fetch_and_add(n, 1);
    return 0;
}
"""
PERF_INCLUDE = "#include <uapi/linux/bpf_perf_event.h>\n"


def variants() -> dict[str, tuple[str, list[str], list[tuple[bytes, str]]]]:
    """name -> (text, cflags, [(function, BCC program type name)]) to load."""
    text, cflags = CpuSampler(unwind="auto").compile_inputs()
    fp_text, fp_cflags = CpuSampler(unwind="fp").compile_inputs()
    handlers = list(COMPILED_HANDLERS)  # their slot-1 copies and the walker's load apart
    walker = [*handlers, (b"unwind_walk", "PERF_EVENT")]
    return {
        "trivial": (TRIVIAL, [], [(b"on_cpu_sample", "PERF_EVENT")]),
        "program": (text, cflags, walker),
        "no-walker": (fp_text, fp_cflags, handlers),
        "+perf-include": (PERF_INCLUDE + text, cflags, walker),
        "+debug-info": (text, [f for f in cflags if f != "-g0"], walker),
    }


def timed(what: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall s, CPU s, result) of ``what()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = what()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def measure(
    text: str, cflags: list[str], funcs: list[tuple[bytes, str]]
) -> tuple[float, float, float]:
    """(compile wall s, compile CPU s, load wall s) of one program."""
    bcc: Any = import_bcc()
    with kernel_source(choose_headers()), kallsyms_stub():
        compile_s, cpu_s, bpf = timed(lambda: bcc.BPF(text=text.encode(), cflags=cflags))
    try:
        load_s, _, _ = timed(
            lambda: [bpf.load_func(name, getattr(bcc.BPF, kind)) for name, kind in funcs]
        )
    finally:
        bpf.cleanup()
    return compile_s, cpu_s, load_s


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    programs = variants()
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in programs}
    for round_no in range(rounds):
        for name, (text, cflags, funcs) in programs.items():
            times[name].append(measure(text, cflags, funcs))
            print(f"round {round_no + 1} {_line(name, [times[name][-1]])}", flush=True)
    print(f"\nmedians of {rounds} rounds:")
    for name, runs in times.items():
        print(f"  {_line(name, runs)}")


def _line(name: str, runs: list[tuple[float, float, float]]) -> str:
    wall, cpu, load = (statistics.median(run[i] for run in runs) for i in range(3))
    return f"{name:14} compile {wall:6.2f} s ({cpu:5.2f} s CPU)  load {load:5.2f} s"


if __name__ == "__main__":
    main()
