"""Binaries deleted or replaced after the process started, or visible only in
another mount namespace, still resolve (through /proc/PID/map_files and
/proc/PID/root), and the frame shows the clean path."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bpftop.symbols.elf.debuginfo import DebugFinder
from bpftop.symbols.file_cache import ElfCache
from bpftop.symbols.frame import Unresolved
from bpftop.symbols.proc.maps import ProcessMaps
from bpftop.symbols.symbolizer import Symbolizer


def test_binary_deleted_after_start(built, run, tmp_path) -> None:
    copy = tmp_path / "doomed"
    shutil.copy(built.pie, copy)
    prog = run(copy)
    copy.unlink()
    sym = Symbolizer()
    process = sym.prepare(prog.pid)
    assert process.maps is not None
    assert any(e.deleted and e.path == str(copy) for e in process.maps.entries)
    frame = sym.user_frames(prog.pid, [prog.addrs["fix_gamma"] + 3])[-1]
    assert (frame.function, frame.offset, frame.module) == ("fix_gamma", 3, str(copy))


def test_binary_replaced_after_start(built, run, tmp_path) -> None:
    path = tmp_path / "replaced"
    shutil.copy(built.pie, path)
    prog = run(path)
    path.unlink()
    shutil.copy(built.lib, path)  # another ELF file now at the same path
    frame = Symbolizer().user_frames(prog.pid, [prog.addrs["fix_beta"] + 1])[-1]
    assert (frame.function, frame.offset) == ("fix_beta", 1)


def test_binary_and_debug_file_only_inside_another_mount_namespace(debug_built, tmp_path):
    """Like a container: the binary and its debuglink file exist only in the
    target's mount namespace, reached through /proc/PID/map_files and /proc/PID/root."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1)")
    hidden = tmp_path / "container"
    hidden.mkdir()
    script = (
        f"mount -t tmpfs none '{hidden}' && cp '{debug_built.linked}' '{hidden}/linked' && "
        f"cp '{debug_built.dir}/linked.debug' '{hidden}/' && exec '{hidden}/linked'"
    )
    proc = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        addrs = {}
        for line in proc.stdout:
            if line.strip() == "ready":
                break
            name, _, value = line.partition(" ")
            addrs[name] = int(value, 16)
        assert not (hidden / "linked").exists()  # not on the host
        sym = Symbolizer(elf_cache=ElfCache(debug_finder=DebugFinder(str(tmp_path / "none"))))
        frame = sym.user_frames(proc.pid, [addrs["fix_alpha"] + 5])[-1]
        # the binary is stripped: only its debug file, seen through /proc/PID/root, names it
        assert (frame.function, frame.offset) == ("fix_alpha", 5)
        assert frame.module == f"{hidden}/linked"
    finally:
        proc.kill()
        proc.communicate()


def test_a_child_gone_unseen_is_named_from_its_parents_maps(built, run) -> None:
    """A forked child shares its parent's mappings: one that exited before its
    own maps were read is named from the parent's (grandchildren too), and
    only once adopted; its own maps win while they can be read."""
    prog = run(built.pie)
    sym = Symbolizer()
    sym.prepare(prog.pid, preload=True)
    gone = [subprocess.Popen(["true"]) for _ in range(3)]
    for proc in gone:
        proc.wait()
    child, grandchild, stranger = (p.pid for p in gone)
    addr = prog.addrs["fix_gamma"] + 3
    sym.user_frames(child, [addr])  # seen before its fork event: unnamed so far
    sym.adopt(child, prog.pid)
    sym.adopt(grandchild, child)
    for pid in (child, grandchild):
        frame = sym.user_frames(pid, [addr])[-1]
        assert (frame.function, frame.offset, frame.module) == ("fix_gamma", 3, str(built.pie))
    unadopted = sym.user_frames(stranger, [addr])[-1]
    assert unadopted.function is None and unadopted.reason is Unresolved.PROCESS_GONE

    zombie = subprocess.Popen(["true"])  # exited, not reaped: its maps read empty
    while Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        time.sleep(0.01)
    sym.user_frames(zombie.pid, [addr])  # seen before its fork event, as above
    sym.adopt(zombie.pid, prog.pid)
    frame = sym.user_frames(zombie.pid, [addr])[-1]
    zombie.wait()
    assert frame.function == "fix_gamma", "empty maps: gone, named from the parent's"

    alive = run(built.pie)  # a live "child" reads its own maps: adoption changes nothing
    sym.adopt(alive.pid, prog.pid)
    own = sym.prepare(alive.pid)
    text = Path(f"/proc/{alive.pid}/maps").read_text()
    assert own.maps is not None and own.maps.entries == ProcessMaps.from_text(text).entries
