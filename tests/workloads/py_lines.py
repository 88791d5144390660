"""Prints, as JSON, the line table of every function and method code object of a
few standard modules, with what ``code.co_lines()`` says, for
tests/symbols/test_python_code.py to check the line table decoder against
each interpreter's own answer: one object per line,
``{"linetable": HEX, "firstlineno": N, "lines": [[START, END, LINE], ...]}``.
"""

import asyncio.base_events
import json
import json.decoder
import threading
import types


def codes(module: types.ModuleType) -> list[types.CodeType]:
    found = []
    for value in vars(module).values():
        for item in (value, *getattr(value, "__dict__", {}).values()):
            code = getattr(item, "__code__", None)
            if isinstance(code, types.CodeType):
                found.append(code)
    return found


for module in (json.decoder, threading, asyncio.base_events):
    for code in codes(module):
        print(
            json.dumps(
                {
                    "linetable": code.co_linetable.hex(),
                    "firstlineno": code.co_firstlineno,
                    "lines": list(code.co_lines()),
                }
            )
        )
