"""What BCC's compile costs in resident memory, with and without releasing LLVM's pages.

    .venv/bin/python -m bench.compile_memory      (root)

Each variant runs in a fresh process that imports BCC, compiles bpftop's
program (``CpuSampler(unwind="auto")``'s text and flags) and prints its
resident set (VmRSS; file-backed RssFile) after each step and its peak
(VmHWM): ``kept`` as BCC leaves it; ``released``, with
bpf/compiler_pages.py's ``release_compiler_pages`` after the import and after
the compile, as bpftop does.
"""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import sys
from bpftop.bpf.compiler_pages import release_compiler_pages
from bpftop.bpf.environment import choose_headers, kernel_source
from bpftop.bpf.program import CpuSampler

release = sys.argv[1] == "released"

def status(step):
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    mib = {k: int(fields[k].split()[0]) // 1024 for k in ("VmRSS", "RssFile", "VmHWM")}
    rss, files, peak = mib["VmRSS"], mib["RssFile"], mib["VmHWM"]
    print(f"  {step:<9} RSS {rss:4d} MiB (files {files:3d})  peak {peak:4d}")

status("start")
import bcc  # not import_bcc, which releases the pages
if release:
    release_compiler_pages()
status("import")
text, cflags = CpuSampler(unwind="auto").compile_inputs()
with kernel_source(choose_headers()):
    program = bcc.BPF(text=text.encode(), cflags=cflags)
status("compiled")
if release:
    release_compiler_pages()
status("after")
"""


def main() -> None:
    for variant in ("kept", "released"):
        print(variant)
        child = [sys.executable, "-c", CHILD, variant]
        subprocess.run(child, check=True, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
