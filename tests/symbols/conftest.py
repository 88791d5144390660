"""Fixtures for the symbols tests: ELF programs built by gcc, live processes
started from them, and ``nm`` output to check the ELF index against."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CFLAGS = ["-O1", "-fno-inline", "-falign-functions=1"]
NM_TEXT_TYPES = set("tTwWi")


@dataclass
class Built:
    """Paths of the fixture binaries."""

    dir: Path
    lib: Path
    pie: Path
    nopie: Path
    pie_lib: Path
    dl: Path
    dynsym: Path
    stripped: Path


def _gcc(*args: str | Path) -> None:
    subprocess.run(["gcc", *CFLAGS, *map(str, args)], check=True, capture_output=True)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    if shutil.which("gcc") is None or shutil.which("nm") is None:
        pytest.skip("gcc and binutils are needed to build the ELF fixtures")
    out = tmp_path_factory.mktemp("elf fixtures")  # a space in the path, on purpose
    prog, lib_src = FIXTURES / "prog.c", FIXTURES / "fixlib.c"
    b = Built(out, *(out / n for n in ("libfix.so", "pie", "nopie", "pielib", "dl", "dyn", "s")))
    _gcc("-fPIC", "-shared", "-o", b.lib, lib_src)
    _gcc("-fPIE", "-pie", "-o", b.pie, prog)
    _gcc("-fno-pie", "-no-pie", "-o", b.nopie, prog)
    _gcc("-fPIE", "-pie", "-DWITH_LIB", "-o", b.pie_lib, prog, f"-L{out}", "-lfix",
         f"-Wl,-rpath,{out}")  # fmt: skip
    _gcc("-fPIE", "-pie", "-DWITH_DL", "-o", b.dl, prog, "-ldl")
    _gcc("-fPIE", "-pie", "-rdynamic", "-o", b.dynsym, prog)
    subprocess.run(["strip", str(b.dynsym)], check=True)
    shutil.copy(b.pie, b.stripped)
    subprocess.run(["strip", str(b.stripped)], check=True)
    return b


@dataclass(frozen=True)
class NmSymbol:
    name: str
    start: int
    size: int
    ifunc: bool = False


def nm_functions(path: Path, dynamic: bool = False) -> list[NmSymbol]:
    """Sized text symbols of ``path`` according to ``nm``."""
    args = ["nm", "-S", "--defined-only", *(["-D"] if dynamic else []), str(path)]
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    symbols = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in NM_TEXT_TYPES:
            name = parts[3].split("@", 1)[0]  # nm -D adds @VERSION
            symbols.append(NmSymbol(name, int(parts[0], 16), int(parts[1], 16), parts[2] == "i"))
    return symbols


@pytest.fixture(scope="session")
def nm() -> Callable[..., list[NmSymbol]]:
    return nm_functions


@dataclass
class Running:
    """A fixture program running, with the addresses it printed."""

    proc: subprocess.Popen[str]
    addrs: dict[str, int] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def read_until_ready(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip() == "ready":
                return
            name, _, value = line.partition(" ")
            assert name != "error", line
            self.addrs[name] = int(value, 16)
        raise AssertionError("fixture program ended before printing ready")

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self) -> None:
        """Close stdin so the program exits, and reap it."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture
def run() -> Iterator[Callable[[Path], Running]]:
    started: list[Running] = []

    def start(path: Path) -> Running:
        proc = subprocess.Popen(
            [str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        running = Running(proc)
        started.append(running)
        running.read_until_ready()
        return running

    yield start
    for running in started:
        if running.proc.poll() is None:
            running.proc.kill()
        running.proc.wait(timeout=10)
        for stream in (running.proc.stdin, running.proc.stdout):
            if stream is not None:
                stream.close()
