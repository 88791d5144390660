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


@pytest.fixture(autouse=True)
def _symbol_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> Path:
    """Keep every Symbolizer() of the tests off /var/cache: a fresh folder each test."""
    folder = tmp_path_factory.mktemp("symbol-cache")
    monkeypatch.setenv("BPFTOP_SYMBOL_CACHE_DIR", str(folder))
    return folder


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
def run() -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(path: Path, *args: str) -> Running:
        proc = subprocess.Popen(
            [str(path), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
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


@dataclass
class DebugBuilt:
    """Stripped fixtures whose names live in separate debug files."""

    dir: Path
    full: Path  # unstripped twin, with DWARF: what nm and addr2line read
    linked: Path  # stripped, .gnu_debuglink to linked.debug in the same folder
    linked_subdir: Path  # stripped, its debug file under .debug/
    linked_root: Path  # stripped, its debug file under <debug root>/<its folder>/
    bad_crc: Path  # stripped, its debuglink file has the wrong contents
    by_build_id: Path  # stripped, its debug file only under <debug root>/.build-id/
    debug_root: Path  # holds only linked_root's debug file
    id_root: Path  # holds only the .build-id tree
    build_id: str = ""


def _objcopy(*args: str | Path) -> None:
    subprocess.run(["objcopy", *map(str, args)], check=True, capture_output=True)


def _split_debug(full: Path, stripped: Path, debug: Path, link: bool) -> None:
    """``stripped``: ``full`` without symbols; ``debug``: its debug file."""
    debug.parent.mkdir(parents=True, exist_ok=True)
    _objcopy("--only-keep-debug", full, debug)
    _objcopy("--strip-all", full, stripped)
    if link:
        _objcopy(f"--add-gnu-debuglink={debug}", stripped)


def build_id_of(path: Path) -> str:
    text = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True).stdout
    for line in text.splitlines():
        if "Build ID:" in line:
            return line.split()[-1]
    raise AssertionError(f"{path} has no build-id")


@pytest.fixture(scope="session")
def debug_built(built: Built) -> DebugBuilt:
    out = built.dir / "dbg"
    out.mkdir()
    root = out / "debug root"
    d = DebugBuilt(out, out / "full", out / "linked", out / "sub" / "linked2", out / "rooted",
                   out / "badcrc", out / "byid", root, out / "id root")  # fmt: skip
    _gcc("-g", "-fPIE", "-pie", "-Wl,--build-id=sha1", "-o", d.full, FIXTURES / "prog.c")
    _split_debug(d.full, d.linked, out / "linked.debug", link=True)
    d.linked_subdir.parent.mkdir()
    _split_debug(d.full, d.linked_subdir, out / "sub" / ".debug" / "linked2.debug", link=True)
    # objcopy records the name (basename) and CRC; the file then moves under the root.
    _split_debug(d.full, d.linked_root, out / "rooted.debug", link=True)
    moved = Path(f"{root}{out}") / "rooted.debug"
    moved.parent.mkdir(parents=True)
    (out / "rooted.debug").rename(moved)
    _split_debug(d.full, d.bad_crc, out / "badcrc.debug", link=True)
    (out / "badcrc.debug").write_bytes((out / "linked.debug").read_bytes() + b"tampered")
    build_id = d.build_id = build_id_of(d.full)
    by_id = d.id_root / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    by_id.parent.mkdir(parents=True)
    _split_debug(d.full, d.by_build_id, by_id, link=False)
    return d


@dataclass
class CxxBuilt:
    pie: Path
    nopie: Path


@pytest.fixture(scope="session")
def cxx_built(built: Built) -> CxxBuilt:
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed to build the C++ fixture")
    b = CxxBuilt(built.dir / "cxx_pie", built.dir / "cxx_nopie")
    source = FIXTURES / "cxxprog.cpp"
    for out, flags in ((b.pie, ["-fPIE", "-pie"]), (b.nopie, ["-fno-pie", "-no-pie"])):
        subprocess.run(["g++", "-O2", "-g", *flags, "-o", str(out), str(source)], check=True,
                       capture_output=True)  # fmt: skip
    return b


@pytest.fixture(scope="session")
def jit_built(built: Built) -> Path:
    out = built.dir / "jit"
    _gcc("-o", out, FIXTURES / "jitprog.c")
    return out


@pytest.fixture(scope="session")
def inlined_built(built: Built) -> Path:
    out = built.dir / "inlined"
    subprocess.run(["gcc", "-O2", "-g", "-fPIE", "-pie", "-o", str(out),
                    str(FIXTURES / "inlined.c")], check=True, capture_output=True)  # fmt: skip
    return out
