"""Naming CPython 3.11 code objects from a live process (symbols/python/code.py)."""

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
from bpftop.symbols.python.code import (
    STR_HASH,
    CodeNames,
    code_ident,
    line_of,
)
from bpftop.symbols.python.layout import PythonLayout
from bpftop.symbols.python.runtime import PythonRuntime, find_python
from tests.pythons import ALL, PYENV312, Interpreter

WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "py_split.py"
LINES = Path(__file__).resolve().parents[1] / "workloads" / "py_lines.py"


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


@pytest.mark.parametrize("python", (*ALL, PYENV312), ids=str)
def test_line_table_agrees_with_each_interpreters_co_lines(python: Interpreter) -> None:
    """The 3.11 format holds in 3.13 and 3.14: checked against their own co_lines()."""
    dumped = subprocess.run(
        python.argv(LINES), capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    checked = 0
    for line in dumped:
        code = json.loads(line)
        table = bytes.fromhex(code["linetable"])
        for start, end, want in code["lines"]:
            for offset in range(start, end, 2):
                assert line_of(table, code["firstlineno"], offset // 2) == want
                checked += 1
    assert checked > 10_000


@pytest.mark.parametrize("python", (*ALL, PYENV312), ids=str)
def test_live_code_objects_are_named_and_a_wrong_address_is_a_miss(python: Interpreter) -> None:
    proc = python.popen(WORKLOAD, "split", "30", stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        code = json.loads(proc.stdout.readline())
        runtime = find_python(proc.pid)
        assert isinstance(runtime, PythonRuntime)
        names = CodeNames(proc.pid, runtime.code_type, runtime.layout)
        ident = _ident(proc.pid, code["hot_a"], runtime.layout)
        first = names.frame(code["hot_a"], -1, ident)
        not_code = names.frame(code["hot_a"] + 8, 0, ident)
        again = names.frame(code["hot_a"], 0, ident)
        other = names.frame(code["hot_a"], 0, ident ^ 1)
    finally:
        proc.kill()
        proc.wait()
    source = WORKLOAD.read_text().splitlines()
    def_line = next(i for i, text in enumerate(source, 1) if text.startswith("def hot_a("))
    seen_as = python.path(WORKLOAD)  # the file name the target sees
    assert first.function == f"hot_a ({seen_as}:{def_line})"
    assert (first.file, first.line, first.module) == (seen_as, def_line, seen_as)
    assert again.function is not None and again.function.startswith("hot_a (")
    assert first.start_line == again.start_line == def_line, "co_firstlineno, for pprof"
    assert not_code.function is None and not_code.reason is not None
    assert other.function is None and other.reason is Unresolved.CODE_FREED


def _ident(pid: int, addr: int, layout: PythonLayout) -> int:
    """The code object's identity, as python.bpf.c reads it."""
    first, name, file = layout.code_firstlineno, layout.code_qualname, layout.code_filename
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        mem.seek(addr + first)
        head = mem.read(name + 8 - first)
        qualname = int.from_bytes(head[name - first :], "little")
        mem.seek(qualname + STR_HASH)
        qualname_hash = int.from_bytes(mem.read(8), "little")
    filename = int.from_bytes(head[file - first : file - first + 8], "little")
    firstlineno = int.from_bytes(head[:4], "little")
    return code_ident(firstlineno, filename, qualname, qualname_hash)
