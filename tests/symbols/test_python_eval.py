"""The eval loop's parts (symbols/python/eval_loop.py) in real interpreters: Debian's
builds split _PyEval_EvalFrameDefault into a hot part under the symbol and a
cold part with its own FDE; 3.14's cold part holds almost the whole loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from bpftop.symbols.python.eval_loop import eval_ranges
from tests.pythons import PY311, PY313, PY314, PYENV313, Interpreter


def _parts(path: Path) -> tuple[tuple[int, int], ...]:
    with open(path, "rb") as stream:
        elf = ELFFile(stream)
        dynsym = elf.get_section_by_name(".dynsym")
        assert isinstance(dynsym, SymbolTableSection)
        symbol = dynsym.get_symbol_by_name("_PyEval_EvalFrameDefault")
        assert symbol
        starts = {
            s["st_value"] for s in dynsym.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"
        }
        parts = eval_ranges(elf, symbol[0]["st_value"], symbol[0]["st_size"])
        assert parts[0] == (symbol[0]["st_value"], symbol[0]["st_value"] + symbol[0]["st_size"])
        # A cold part is no exported function, and no other function is taken for one.
        assert not starts & {start for start, _ in parts[1:]}
        return parts


@pytest.mark.parametrize(
    ("python", "cold_bytes"), [(PY311, 10_000), (PY313, 10_000), (PY314, 80_000)], ids=str
)
def test_debian_builds_have_one_cold_part(python: Interpreter, cold_bytes: int) -> None:
    parts = _parts(python.host_binary())
    assert len(parts) == 2, parts
    assert parts[1][1] - parts[1][0] >= cold_bytes


def test_an_unsplit_eval_loop_is_its_symbol() -> None:
    lib = Path(PYENV313.binary).parent.parent / "lib" / "libpython3.13.so.1.0"
    assert len(_parts(lib)) == 1
