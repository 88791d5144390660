"""A debug file installed inside a container's root after a first run is used
on the next run: the symbol cache remembers the places it searched as the
target sees them, and looks for them under the root of the process asking
now. The root is a minimal copy (the stripped program, its libc and dynamic
loader) on a tmpfs mounted in a private mount namespace, entered with
chroot: the host cannot see any of its files, and /proc/PID/maps shows them
with the chroot's folder in front."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from bpftop.symbols.elf.debuginfo import DebugFinder, debug_file_appeared, inside_root
from bpftop.symbols.elf.disk_cache import DiskCache
from bpftop.symbols.elf.index import ElfIndex
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.frame import Unresolved
from bpftop.symbols.symbolizer import Symbolizer
from tests.symbols.conftest import DebugBuilt, Running

APP = "/app/prog"


def _libraries(binary: Path) -> list[str]:
    """The absolute paths of the shared objects ``binary`` loads (per ldd)."""
    text = subprocess.run(["ldd", str(binary)], check=True, capture_output=True, text=True).stdout
    return [w for line in text.splitlines() for w in line.split() if w.startswith("/")]


def _start_in_root(root: Path, binary: Path, debug: tuple[Path, str] | None) -> Running:
    """``binary`` run as /app/prog in a fresh root at ``root`` (a tmpfs only its
    mount namespace sees), with ``debug`` (file, path inside the root) installed."""
    files = [(lib, lib) for lib in _libraries(binary)] + [(str(binary), APP)]
    if debug is not None:
        files.append((str(debug[0]), debug[1]))
    steps = [f"mount -t tmpfs none {shlex.quote(str(root))}"]
    for source, inside in files:
        target = shlex.quote(f"{root}{inside}")
        steps.append(f"mkdir -p $(dirname {target}) && cp {shlex.quote(source)} {target}")
    steps.append(f"exec chroot {shlex.quote(str(root))} {APP}")
    proc = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", " && ".join(steps)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    running = Running(proc)
    running.read_until_ready()
    return running


def _symbolizer(cache_dir: Path) -> Symbolizer:
    """A new bpftop run: nothing in memory, the disk cache of the runs before."""
    return Symbolizer(elf_cache=ElfCache(disk_cache=DiskCache(str(cache_dir))))


@pytest.mark.parametrize("how", ["build-id", "debuglink"])
def test_debug_file_installed_in_the_root_after_a_first_run(
    debug_built: DebugBuilt, tmp_path: Path, how: str
) -> None:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1)")
    binary, debug_dest = {
        "build-id": (
            debug_built.by_build_id,
            f"/usr/lib/debug/.build-id/{debug_built.build_id[:2]}/{debug_built.build_id[2:]}.debug",
        ),
        "debuglink": (debug_built.linked, "/app/linked.debug"),
    }[how]
    debug_file = debug_built.dir / "linked.debug"  # the one split from the same build
    root, cache_dir = tmp_path / "root", tmp_path / "cache"
    root.mkdir()
    first = _start_in_root(root, binary, None)
    try:
        assert not Path(f"{root}{APP}").exists()  # invisible from the host
        frame = _symbolizer(cache_dir).user_frames(first.pid, [first.addrs["fix_alpha"] + 5])[-1]
        assert frame.function is None and frame.reason == Unresolved.NO_SYMBOLS, frame
        assert frame.module == f"{root}{APP}"
    finally:
        first.finish()
    assert any(cache_dir.iterdir()), "the first run stored its answer"

    second = _start_in_root(root, binary, (debug_file, debug_dest))
    try:
        sym = _symbolizer(cache_dir)
        frame = sym.user_frames(second.pid, [second.addrs["fix_alpha"] + 5])[-1]
    finally:
        second.finish()
    assert (frame.function, frame.offset) == ("fix_alpha", 5), frame


def test_places_searched_are_kept_as_the_target_sees_them(debug_built: DebugBuilt) -> None:
    """No /proc/PID/root prefix in what is stored; a chroot's folder is taken
    off the maps path before debuglink places are built from it."""
    finder = DebugFinder("/usr/lib/debug")
    binary = inside_root("/srv/box/app/prog", "/srv/box")
    assert binary == "/app/prog" and inside_root("/app/prog", "/") == "/app/prog"
    assert inside_root("/srv/boxer/x", "/srv/box") == "/srv/boxer/x"
    link = ElfIndex.load(str(debug_built.linked))
    assert isinstance(link, ElfIndex) and link.debuglink is not None
    found, tried = finder.find(binary, "abcd", link.debuglink, "/proc/1/root")
    assert found is None
    assert tried == (
        "/usr/lib/debug/.build-id/ab/cd.debug",
        "/app/linked.debug",
        "/app/.debug/linked.debug",
        "/usr/lib/debug/app/linked.debug",
    )


def test_a_debug_file_appears_under_the_root_asking_now(tmp_path: Path) -> None:
    searched = ("/usr/lib/debug/.build-id/ab/cd.debug", "/app/x.debug")
    later = tmp_path / "root"
    assert not debug_file_appeared(searched, str(later))
    (later / "app").mkdir(parents=True)
    (later / "app" / "x.debug").write_bytes(b"")
    assert debug_file_appeared(searched, str(later))
    assert not debug_file_appeared(searched, "")  # not on the host
