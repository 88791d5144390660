"""Naming CPython 3.11 code objects from a live process (symbols/python_code.py)."""

from __future__ import annotations

import asyncio.base_events
import json
import json.decoder
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from bpftop.symbols.frame import Unresolved
from bpftop.symbols.python_code import (
    FILENAME,
    FIRSTLINENO,
    QUALNAME,
    STR_HASH,
    CodeNames,
    code_ident,
    line_of,
)
from bpftop.symbols.python_runtime import PythonRuntime, find_python

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_split.py"


def _codes(module: types.ModuleType) -> list[types.CodeType]:
    found = []
    for value in vars(module).values():
        for item in (value, *getattr(value, "__dict__", {}).values()):
            code = getattr(item, "__code__", None)
            if isinstance(code, types.CodeType):
                found.append(code)
    return found


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the 3.11 line table format")
def test_line_table_agrees_with_co_lines() -> None:
    checked = 0
    for module in (json.decoder, threading, asyncio.base_events):
        for code in _codes(module):
            for start, end, line in code.co_lines():
                for offset in range(start, end, 2):
                    assert line_of(code.co_linetable, code.co_firstlineno, offset // 2) == line
                    checked += 1
    assert checked > 10_000


def test_live_code_objects_are_named_and_a_wrong_address_is_a_miss() -> None:
    proc = subprocess.Popen(
        ["/usr/bin/python3.11", str(WORKLOAD), "split", "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        code = json.loads(proc.stdout.readline())
        runtime = find_python(proc.pid)
        assert isinstance(runtime, PythonRuntime)
        names = CodeNames(proc.pid, runtime.code_type)
        ident = _ident(proc.pid, code["hot_a"])
        first = names.frame(code["hot_a"], -1, ident)
        not_code = names.frame(code["hot_a"] + 8, 0, ident)
        again = names.frame(code["hot_a"], 0, ident)
        other = names.frame(code["hot_a"], 0, ident ^ 1)
    finally:
        proc.kill()
        proc.wait()
    source = WORKLOAD.read_text().splitlines()
    def_line = next(i for i, text in enumerate(source, 1) if text.startswith("def hot_a("))
    assert first.function == f"hot_a ({WORKLOAD}:{def_line})"
    assert (first.file, first.line, first.module) == (str(WORKLOAD), def_line, str(WORKLOAD))
    assert again.function is not None and again.function.startswith("hot_a (")
    assert first.start_line == again.start_line == def_line, "co_firstlineno, for pprof"
    assert not_code.function is None and not_code.reason is not None
    assert other.function is None and other.reason is Unresolved.CODE_FREED


def _ident(pid: int, addr: int) -> int:
    """The code object's identity, as python.bpf.c reads it."""
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        mem.seek(addr + FIRSTLINENO)
        head = mem.read(QUALNAME + 8 - FIRSTLINENO)
        qualname = int.from_bytes(head[QUALNAME - FIRSTLINENO :], "little")
        mem.seek(qualname + STR_HASH)
        qualname_hash = int.from_bytes(mem.read(8), "little")
    filename = int.from_bytes(head[FILENAME - FIRSTLINENO : FILENAME - FIRSTLINENO + 8], "little")
    firstlineno = int.from_bytes(head[:4], "little")
    return code_ident(firstlineno, filename, qualname, qualname_hash)
