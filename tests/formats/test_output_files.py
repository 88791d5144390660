"""Where a profile is written: devices, FIFOs and links stay what they are,
files keep their owner and mode, new files follow the umask, ``-`` is stdout,
and every failed write is an ``OutputError`` with no debris left behind."""

from __future__ import annotations

import errno
import io
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from bpftop.base.errors import OutputError
from bpftop.tui.formats.atomic import write_new_file, write_output
from bpftop.tui.formats.profile_io import saved_writer, write_folded, write_saved
from bpftop.tui.formats.registry import NAMES as FORMATS
from bpftop.tui.formats.saved import SavedProfile, from_tree
from tests.formats.folded_oracle import folded_lines
from tests.formats.test_saved import META, sample_profile

ROOT = os.geteuid() == 0
NOBODY = 65534


@pytest.fixture(scope="module")
def saved() -> SavedProfile:
    return from_tree(sample_profile().tree(), META)


def encoded(saved: SavedProfile, fmt: str) -> bytes:
    """The bytes ``write_saved`` writes for ``fmt``."""
    buffer = io.BytesIO()
    saved_writer(saved, fmt)(buffer)
    return buffer.getvalue()


def char_device(tmp_path: Path, name: str, minor: int) -> Path:
    """A copy of /dev/null (minor 3) or /dev/full (7) in ``tmp_path`` as root;
    else the real one (a non-root writer cannot replace it, only fail)."""
    if not ROOT:
        return Path("/dev") / name
    node = tmp_path / name
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    return node


def is_char_device(path: Path, minor: int) -> bool:
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, minor)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_null_device_is_written_not_replaced(
    saved: SavedProfile, fmt: str, tmp_path: Path
) -> None:
    null = char_device(tmp_path, "null", 3)
    write_saved(saved, null, fmt)
    assert is_char_device(null, 3), "the device node is still the device"
    assert sorted(tmp_path.iterdir()) == ([null] if ROOT else [])


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_full_device_is_an_error(saved: SavedProfile, fmt: str, tmp_path: Path) -> None:
    full = char_device(tmp_path, "full", 7)
    with pytest.raises(OutputError) as info:
        write_saved(saved, full, fmt)
    message = str(info.value)
    assert f"cannot write {full}: No space left on device" in message, message
    assert "full" in info.value.hint and "\n" not in message
    assert info.value.exit_code == 6
    assert is_char_device(full, 7)
    assert sorted(tmp_path.iterdir()) == ([full] if ROOT else [])


def read_fifo(path: Path, into: list[bytes], close_after: int | None = None) -> threading.Thread:
    """A thread that opens the FIFO, reads it to the end (or ``close_after`` bytes) and closes."""

    def run() -> None:
        with open(path, "rb") as fifo:
            into.append(fifo.read() if close_after is None else fifo.read(close_after))

    reader = threading.Thread(target=run, daemon=True)
    reader.start()
    return reader


@pytest.mark.parametrize("fmt", ["folded", "pprof"])
def test_a_fifo_stays_a_fifo_and_its_reader_gets_the_profile(
    saved: SavedProfile, fmt: str, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = read_fifo(fifo, got)
    write_saved(saved, fifo, fmt)
    reader.join(10)
    assert not reader.is_alive(), "the reader never saw the end of the data"
    assert got == [encoded(saved, fmt)]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(tmp_path.iterdir()) == [fifo]


def test_a_fifo_whose_reader_leaves_early_is_an_error(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = read_fifo(fifo, got, close_after=1)
    with pytest.raises(OutputError, match="Broken pipe") as info:
        write_output(fifo, lambda out: out.write(b"x" * (4 << 20)))  # more than a pipe holds
    reader.join(10)
    assert got == [b"x"]
    assert "reader closed the pipe" in info.value.hint
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_stays_and_its_target_gets_the_profile(
    saved: SavedProfile, tmp_path: Path
) -> None:
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "real.folded"
    target.write_text("old\n")
    os.chmod(target, 0o600)
    link = tmp_path / "latest.folded"
    link.symlink_to("runs/real.folded")
    write_saved(saved, link, "folded")
    assert link.is_symlink() and os.readlink(link) == "runs/real.folded"
    assert target.read_bytes() == encoded(saved, "folded")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["real.folded"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.folded", "runs"]


def test_a_hard_linked_file_is_written_in_place_and_keeps_its_links(
    saved: SavedProfile, tmp_path: Path
) -> None:
    """A rename would leave the other name holding the old profile."""
    (tmp_path / "runs").mkdir()
    first = tmp_path / "runs" / "today.folded"
    first.write_text("old 1\n" * 1000)
    other = tmp_path / "latest.folded"
    os.link(first, other)
    inode = first.stat().st_ino
    write_saved(saved, first, "folded")
    assert first.stat().st_ino == inode and first.stat().st_nlink == 2
    assert other.read_bytes() == first.read_bytes() == encoded(saved, "folded")
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["today.folded"]


def test_a_file_of_one_link_is_still_replaced_atomically(
    saved: SavedProfile, tmp_path: Path
) -> None:
    """(The other half of the rule: a new inode, the old one left whole.)"""
    path = tmp_path / "one.folded"
    path.write_text("old 1\n")
    with path.open() as before:  # a reader of the old file keeps reading the old file
        write_saved(saved, path, "folded")
        assert before.read() == "old 1\n"
    assert path.read_bytes() == encoded(saved, "folded")


def test_a_dangling_symlink_gets_its_target_created(saved: SavedProfile, tmp_path: Path) -> None:
    link = tmp_path / "latest.svg"
    link.symlink_to("real.svg")
    write_saved(saved, link, "svg")
    assert link.is_symlink()
    assert (tmp_path / "real.svg").read_bytes() == encoded(saved, "svg")


def test_a_failed_write_through_a_dangling_symlink_leaves_nothing(tmp_path: Path) -> None:
    link = tmp_path / "latest.folded"
    link.symlink_to("real.folded")

    def fail(out: IO[bytes]) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with pytest.raises(OutputError, match="Input/output error"):
        write_output(link, fail)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.folded"]


@pytest.mark.skipif(not ROOT, reason="giving a file to another user (chown) needs root")
def test_another_users_private_file_keeps_its_owner_and_mode(
    saved: SavedProfile, tmp_path: Path
) -> None:
    path = tmp_path / "theirs.pb.gz"
    path.write_bytes(b"old")
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, 0o600)
    write_saved(saved, path, "pprof")
    st = path.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o600)
    assert path.read_bytes() == encoded(saved, "pprof")
    assert [p.name for p in tmp_path.iterdir()] == ["theirs.pb.gz"]


@pytest.mark.skipif(not ROOT, reason="giving a file to another user (chown) needs root")
def test_a_file_whose_owner_cannot_be_kept_is_rewritten_in_place(
    saved: SavedProfile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without root, fchown to the file's owner fails: then the file is rewritten in place."""
    path = tmp_path / "shared.folded"
    path.write_text("old\n" * 1000)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, 0o664)
    before = path.stat()

    def refuse(fd: int, uid: int, gid: int) -> None:
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "fchown", refuse)
    write_saved(saved, path, "folded")
    after = path.stat()
    assert after.st_ino == before.st_ino, "the same file, not a replacement"
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (NOBODY, NOBODY, 0o664)
    assert path.read_bytes() == encoded(saved, "folded"), "truncated, then written"
    assert [p.name for p in tmp_path.iterdir()] == ["shared.folded"]


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604])
def test_an_existing_file_keeps_its_mode(saved: SavedProfile, mode: int, tmp_path: Path) -> None:
    path = tmp_path / "mine.speedscope.json"
    path.write_bytes(b"old")
    os.chmod(path, mode)
    before = path.stat()
    write_saved(saved, path, "speedscope")
    after = path.stat()
    assert stat.S_IMODE(after.st_mode) == mode
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    assert after.st_ino != before.st_ino, "replaced atomically, not rewritten in place"
    assert path.read_bytes() == encoded(saved, "speedscope")


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.mark.parametrize(("mask", "mode"), [(0o077, 0o600), (0o022, 0o644), (0o002, 0o664)])
def test_a_new_file_follows_the_umask(
    saved: SavedProfile, umask: None, mask: int, mode: int, tmp_path: Path
) -> None:
    os.umask(mask)
    for fmt in FORMATS:
        path = tmp_path / f"new-{fmt}"
        write_saved(saved, path, fmt)
        assert stat.S_IMODE(path.stat().st_mode) == mode, fmt
    assert write_folded(sample_profile().tree(), tmp_path / "w.folded") > 0
    assert stat.S_IMODE((tmp_path / "w.folded").stat().st_mode) == mode


@pytest.mark.parametrize("fmt", FORMATS)
def test_dash_is_standard_output(
    saved: SavedProfile,
    fmt: str,
    capfdbinary: pytest.CaptureFixture[bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # a file named "-" would show up here
    write_saved(saved, "-", fmt)
    write_saved(saved, Path("-"), fmt)
    assert capfdbinary.readouterr().out == 2 * encoded(saved, fmt)
    assert list(tmp_path.iterdir()) == []


def test_folded_to_standard_output_counts_its_lines(
    capfd: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a file named "-" would show up here
    tree = sample_profile().tree()
    assert write_folded(tree, "-") == len(list(folded_lines(tree)))
    out = capfd.readouterr().out
    assert sorted(out.splitlines()) == sorted(folded_lines(tree)) and out.endswith("\n")
    assert list(tmp_path.iterdir()) == []


def test_a_full_standard_output_is_an_error(tmp_path: Path) -> None:
    """Through a child process: its fd 1 is /dev/full."""
    code = (
        "import sys\n"
        "from bpftop.base.errors import OutputError\n"
        "from bpftop.tui.formats.atomic import write_output\n"
        "try:\n"
        "    write_output('-', lambda out: out.write(b'stacks 1\\n'))\n"
        "except OutputError as err:\n"
        "    print(err, file=sys.stderr); sys.exit(err.exit_code)\n"
    )
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE, text=True,
            cwd=tmp_path,
        )  # fmt: skip
    assert result.returncode == 6, result.stderr
    assert result.stderr.startswith("cannot write to standard output: No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_directories_and_sockets_are_refused(saved: SavedProfile, tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        for name, reason in (("adir", "it is a directory"), ("sock", "it is a socket")):
            with pytest.raises(OutputError, match=f"cannot write .*{name}: {reason}"):
                write_saved(saved, tmp_path / name, "folded")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "sock"]


@pytest.mark.skipif(ROOT, reason="root may write any file")
def test_a_read_only_file_in_a_writable_directory_is_refused(
    saved: SavedProfile, tmp_path: Path
) -> None:
    path = tmp_path / "ro.folded"
    path.write_text("old\n")
    os.chmod(path, 0o444)
    with pytest.raises(OutputError, match="Permission denied"):
        write_saved(saved, path, "folded")
    assert path.read_text() == "old\n"


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted in ``tmp_path``, filled up."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if not ROOT:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(mount)],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        (mount / "old.folded").write_text("old 1\n")
        filler = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            with pytest.raises(OSError) as full:
                while True:
                    os.write(filler, b"\0" * 4096)
        finally:
            os.close(filler)
        assert full.value.errno == errno.ENOSPC
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.mark.parametrize("name", ["new.pb.gz", "old.folded"])
def test_a_full_file_system_is_an_error_and_leaves_no_temp_file(
    saved: SavedProfile, tiny_fs: Path, name: str
) -> None:
    with pytest.raises(OutputError, match="No space left on device") as info:
        write_saved(saved, tiny_fs / name, "pprof" if name.endswith(".gz") else "folded")
    assert info.value.exit_code == 6 and "full" in info.value.hint
    assert sorted(p.name for p in tiny_fs.iterdir()) == ["filler", "old.folded"]
    assert (tiny_fs / "old.folded").read_text() == "old 1\n", "the old file is untouched"


def test_a_new_file_of_a_fresh_name_is_private(tmp_path: Path, umask: None) -> None:
    os.umask(0)
    first = write_new_file(tmp_path, "bpftop-1-", ".folded", lambda out: out.write(b"a 1\n"))
    second = write_new_file(tmp_path, "bpftop-1-", ".folded", lambda out: out.write(b"b 1\n"))
    assert first != second and first.parent == second.parent == tmp_path
    assert first.name.startswith("bpftop-1-") and first.name.endswith(".folded")
    assert (first.read_bytes(), second.read_bytes()) == (b"a 1\n", b"b 1\n")
    assert stat.S_IMODE(first.stat().st_mode) == 0o600


def test_a_new_file_that_cannot_be_written_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="No such file or directory"):
        write_new_file(tmp_path / "missing", "p-", ".folded", lambda out: out.write(b"a 1\n"))

    def fail(out: IO[bytes]) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OutputError, match="No space left on device"):
        write_new_file(tmp_path, "p-", ".folded", fail)
    assert list(tmp_path.iterdir()) == []
