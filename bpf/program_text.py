"""What BCC compiles, and what a refused load says.

The program is ``bpftop.bpf.c``; the .eh_frame walker (``unwind.bpf.c``) is
appended when the program calls its hook and user stacks are not frame
pointers only (``--unwind fp`` defines NO_WALKER, ~1 s less to compile), and
the Python walker (``python.bpf.c``) after it: BCC rewrites map calls and
finds programs only in its main file. A test's own program may call neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bpftop.base.errors import BpfLoadError
from bpftop.bpf.capture import first_useful_line

PROGRAM_DIR = Path(__file__).resolve().parent
PROGRAM_FILE = PROGRAM_DIR / "bpftop.bpf.c"
WALKER_FILE = PROGRAM_DIR / "unwind.bpf.c"  # appended to the program (see its header)
PYTHON_FILE = PROGRAM_DIR / "python.bpf.c"  # appended after the walker (see its header)


def calls_python(program: str) -> bool:
    """True for a program with the Python walker's hook."""
    return "python_user_stack" in program


def calls_walker(program: str) -> bool:
    """True for a program with the .eh_frame walker's hook."""
    return "unwind_user_stack" in program


def source_text(source: Path, unwind: str) -> str:
    """``source`` with the walkers it calls appended (not the .eh_frame walker
    with ``unwind`` "fp": then NO_WALKER stubs its hook out)."""
    text = source.read_text()
    if unwind != "fp" and calls_walker(text):
        text = f"{text}\n/* {WALKER_FILE.name} */\n{WALKER_FILE.read_text()}"
    if calls_python(text):
        text = f"{text}\n/* {PYTHON_FILE.name} */\n{PYTHON_FILE.read_text()}"
    return text


def compiler_flags(defines: Mapping[str, int]) -> list[str]:
    """The flags BCC is given besides its own: the -D defines, the program's
    folder for its header, and ``-g0``. BCC puts ``-g`` before these (for the
    program's BTF); ``-g0`` takes it back. Nothing reads that BTF (maps are read
    through BCC's own type descriptions, kernel fields are located from the
    kernel's BTF: bpf/btf.py); without it the compile makes no debug info and
    no BTF of it: 1.13 -> 0.96 CPU-s a compile (medians of 8 interleaved
    compiles in one process; bench.compile_bench's ``+debug-info``). What is
    lost: source lines in a refused load's verifier log."""
    flags = [f"-D{k}={v}" for k, v in defines.items()]
    return [*flags, f"-I{PROGRAM_DIR}", "-Wno-macro-redefined", "-g0"]


def load_error(exc: Exception, log: str) -> BpfLoadError:
    """The one line a refused load says: the verifier's or compiler's first useful line."""
    line = first_useful_line(log) or next(iter(str(exc).splitlines()), "") or repr(exc)
    return BpfLoadError(
        f"the kernel rejected bpftop's BPF program: {line}",
        "run with --print-bpf to see the program; check dmesg and kernel BPF support",
    )
