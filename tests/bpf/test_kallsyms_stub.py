"""BCC compiles without reading every kernel symbol (bpf/kallsyms_stub.py): the
stub is seen only by the compiling thread and only during the compile, and
BCC's rewriter makes the same program with it as without it."""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

from bpftop.bpf.attach import COMPILED_HANDLERS
from bpftop.bpf.environment import choose_headers, import_bcc, kernel_source
from bpftop.bpf.kallsyms_stub import STUB, has_helpers, kallsyms_stub
from bpftop.bpf.program import CpuSampler

REAL_LINES = 1000  # any kernel with BTF has far more symbols than this


def _lines() -> int:
    with open("/proc/kallsyms") as f:
        return sum(1 for _ in f)


def test_only_the_thread_in_the_block_sees_the_stub(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    inside, done = threading.Event(), threading.Event()

    def compiling() -> None:
        os.chdir(tmp_path)  # a thread's chdir moves the whole process's
        with kallsyms_stub() as moved:
            seen["moved"], seen["stub"] = moved, Path("/proc/kallsyms").read_text()
            os.chdir("/")  # as BCC does while it compiles: this thread's own now
            inside.set()
            done.wait(10)
        seen["after"], seen["cwd"] = _lines(), os.getcwd()

    thread = threading.Thread(target=compiling)
    thread.start()
    assert inside.wait(10)
    others, cwd = _lines(), os.getcwd()  # from another thread, meanwhile
    done.set()
    thread.join()
    assert seen["moved"] is True and seen["stub"] == STUB
    assert others > REAL_LINES and seen["after"] > REAL_LINES  # (BPF programs come and go)
    assert cwd == seen["cwd"] == str(tmp_path)
    assert "kallsyms" not in Path("/proc/self/mountinfo").read_text()


def test_the_compile_is_the_same_with_the_stub() -> None:
    """Same instructions (map fds aside) in every function, stub or not."""
    bcc = import_bcc()
    text, cflags = CpuSampler(unwind="auto").compile_inputs()
    programs = []
    for stub in (False, True):
        with kernel_source(choose_headers()), kallsyms_stub() if stub else _nothing():
            bpf = bcc.BPF(text=text.encode(), cflags=cflags)  # type: ignore[attr-defined]
        try:
            programs.append(_instructions(bcc, bpf))
        finally:
            bpf.cleanup()
    plain, stubbed = programs
    assert {name for name, _ in COMPILED_HANDLERS} | {b"unwind_walk", b"python_walk"} <= set(plain)
    assert stubbed == plain


def test_kernels_without_the_helpers_are_left_alone() -> None:
    assert has_helpers("6.18.0-custom") and has_helpers("5.5.0")
    assert not has_helpers("5.4.0-150-generic") and not has_helpers("4.19.0")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _instructions(bcc: object, bpf: object) -> dict[bytes, bytes]:
    """Each function's instructions, with the map fds of ld_imm64 zeroed."""
    lib = bcc.libbcc.lib  # type: ignore[attr-defined]
    module = bpf.module  # type: ignore[attr-defined]
    out = {}
    for i in range(lib.bpf_num_functions(module)):
        name = lib.bpf_function_name(module, i)
        size = lib.bpf_function_size(module, name)
        code = bytearray(ctypes.string_at(lib.bpf_function_start(module, name), size))
        for at in range(0, len(code), 8):
            if code[at] == 0x18:  # BPF_LD | BPF_IMM | BPF_DW: the fd differs per load
                code[at + 4 : at + 8] = bytes(4)
        out[bytes(name)] = bytes(code)
    return out
