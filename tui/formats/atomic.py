"""Writing an output file the way the user meant: the one place bpftop writes profiles.

``write_output(path, fill)`` lets ``fill`` write the bytes and decides how:

- ``-``: standard output.
- A new path or an existing regular file: atomically, through a temp file
  beside it renamed into place. A new file gets mode 0666 minus the umask
  (as ``open()`` would); an existing one keeps its owner, group and mode.
  A failed write leaves the old file as it was and no temp file behind.
  (When the owner cannot be kept, i.e. not root and the file is someone
  else's, or the file has other hard links, which a rename would leave
  holding the old profile, the file is rewritten in place instead, as a
  shell redirection would.)
- A symbolic link: followed, as the kernel follows it (so fs.protected_symlinks
  applies); the file it names is written as above and the link stays.
- A character or block device or a FIFO: written in place, never replaced.

A process that must exit mid-write (a stop cut short: tui/cli/shutdown) calls
``abandon_unfinished()`` first: the temp files not yet renamed into place are
removed, so the old file stays as it was and no debris is left.

Every failure, including a write error at the end (a full disk or device,
a reader that closed its pipe), raises ``OutputError`` with the reason and a
one-line hint; nothing here reports success it did not have.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from bpftop.base.errors import OutputError

STDOUT = "-"
"""The output name that means standard output."""

_HINTS = {
    errno.ENOSPC: "the disk or device is full; free some space or choose another place",
    errno.EDQUOT: "the disk quota is used up; free some space or choose another place",
    errno.EPIPE: "the reader closed the pipe before everything was written",
    errno.EACCES: "choose a writable path",
    errno.EPERM: "choose a writable path",
    errno.EROFS: "the file system is read-only; choose another place",
    errno.ENOENT: "create the directory or choose another path",
    errno.ENOTDIR: "create the directory or choose another path",
    errno.EISDIR: "give a file name, not a directory",
}
_DEFAULT_HINT = "choose a writable file or directory for the output"

_unfinished: set[str] = set()  # temp files being written (not renamed into place yet)
_unfinished_lock = threading.Lock()


def _forget(name: str) -> None:
    """``name`` was renamed into place or removed: no longer unfinished."""
    with _unfinished_lock:
        _unfinished.discard(name)


def abandon_unfinished() -> None:
    """Remove every temp file still being written (the process exits before they are done)."""
    with _unfinished_lock:
        names = list(_unfinished)
        _unfinished.clear()
    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(name)


def write_output(path: str | os.PathLike[str], fill: Callable[[IO[bytes]], object]) -> None:
    """Let ``fill`` write the output for ``path`` (``-``: stdout); ``OutputError`` says why not."""
    if os.fspath(path) == STDOUT:
        _write_stdout(fill)
        return
    target = Path(path)
    try:
        real, created = _follow(target)
        try:
            _write_file(real, fill)
        except BaseException:
            if created:  # the empty file a dangling link's target was created as
                with contextlib.suppress(OSError):
                    os.unlink(real)
            raise
    except OSError as err:
        raise OutputError(f"cannot write {target}: {_reason(err)}", _hint(err)) from err


def write_new_file(
    directory: str | os.PathLike[str], prefix: str, suffix: str,
    fill: Callable[[IO[bytes]], object],
) -> Path:  # fmt: skip
    """Write a file of a fresh, unguessable name in ``directory`` (mode 0600); return its path.

    For output saved where the user did not ask (under /tmp): the name is
    created exclusively, so a planted file or link of that name cannot
    redirect it.
    """
    fd, name = -1, ""
    try:
        fd, name = _create_temp(Path(directory), prefix, suffix, 0o600)
        with os.fdopen(fd, "wb") as out:
            fd = -1
            fill(out)
            out.flush()
            os.fsync(out.fileno())
        _forget(name)
        done, name = Path(name), ""
        return done
    except OSError as err:
        where = name or os.path.join(directory, f"{prefix}*{suffix}")
        raise OutputError(f"cannot write {where}: {_reason(err)}", _hint(err)) from err
    finally:
        _release(fd, name)


def _write_stdout(fill: Callable[[IO[bytes]], object]) -> None:
    """Write to a duplicate of fd 1 (a failed write leaves nothing buffered in sys.stdout)."""
    try:
        sys.stdout.flush()
        with os.fdopen(os.dup(sys.stdout.fileno()), "wb") as out:
            fill(out)
            out.flush()
    except (OSError, ValueError) as err:  # ValueError: sys.stdout closed or not a file
        reason = _reason(err) if isinstance(err, OSError) else str(err)
        hint = _hint(err) if isinstance(err, OSError) else _DEFAULT_HINT
        raise OutputError(f"cannot write to standard output: {reason}", hint) from err


def _follow(target: Path) -> tuple[Path, bool]:
    """The file a write to ``target`` lands on, and whether it was just created.

    A symbolic link is followed by the kernel (``os.stat``), which applies
    fs.protected_symlinks; the link's resolved path must name that same file.
    A dangling link's target is created through the link, as ``open()`` would.
    """
    if not target.is_symlink():
        return target, False
    created = False
    try:
        seen = os.stat(target)
    except FileNotFoundError:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o666))
        created = True
        seen = os.stat(target)
    real = Path(os.path.realpath(target))
    now = os.stat(real)
    if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
        raise OSError(errno.ELOOP, f"the link changed while it was being followed ({real})")
    return real, created


def _write_file(path: Path, fill: Callable[[IO[bytes]], object]) -> None:
    """Replace a regular (or new) file atomically; write anything else in place."""
    try:
        old: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        old = None
    if old is None:
        _replace(path, fill, None)
        return
    mode = old.st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "it is a directory")
    if stat.S_ISSOCK(mode):
        raise OSError(errno.ENXIO, "it is a socket")
    if not stat.S_ISREG(mode):  # a device or FIFO: write to it, never replace it
        _write_in_place(path, fill, truncate=False)
        return
    if not os.access(path, os.W_OK):  # a directory we may write must not overrule the file
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    if old.st_nlink > 1:  # a rename would split the file from its other names
        _write_in_place(path, fill, truncate=True)
        return
    _replace(path, fill, old)


def _replace(path: Path, fill: Callable[[IO[bytes]], object], old: os.stat_result | None) -> None:
    """Write a temp file beside ``path`` with ``old``'s owner and mode, then rename it over."""
    fd, tmp = _create_temp(path.parent, f".{path.name[:200]}.", ".tmp", 0o600 if old else 0o666)
    try:
        if old is not None and not _take_owner_and_mode(fd, old):
            os.close(fd)
            fd = -1
            os.unlink(tmp)
            _forget(tmp)
            tmp = ""
            _write_in_place(path, fill, truncate=True)
            return
        with os.fdopen(fd, "wb") as out:
            fd = -1
            fill(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        _forget(tmp)
        tmp = ""
    finally:
        _release(fd, tmp)


def _take_owner_and_mode(fd: int, old: os.stat_result) -> bool:
    """Give the open temp file ``old``'s owner, group and mode; False if we may not."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except PermissionError:
            return False
    os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after chown, which clears set-id bits
    return True


def _write_in_place(path: Path, fill: Callable[[IO[bytes]], object], *, truncate: bool) -> None:
    """Open what is there for writing (no create) and write; errors surface as OSError."""
    flags = os.O_WRONLY | os.O_CLOEXEC | (os.O_TRUNC if truncate else 0)
    with os.fdopen(os.open(path, flags), "wb") as out:
        fill(out)
        out.flush()


def _create_temp(directory: Path, prefix: str, suffix: str, mode: int) -> tuple[int, str]:
    """Create a file of a new random name exclusively; the kernel applies the umask to ``mode``."""
    for _ in range(100):
        name = str(directory / f"{prefix}{os.urandom(6).hex()}{suffix}")
        with _unfinished_lock:
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
            except FileExistsError:
                continue
            _unfinished.add(name)
            return fd, name
    raise FileExistsError(errno.EEXIST, f"no free temp file name in {directory}")


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


def _hint(err: OSError) -> str:
    return _HINTS.get(err.errno or 0, _DEFAULT_HINT)


def _release(fd: int, leftover: str) -> None:
    """Close ``fd`` (if open) and remove ``leftover`` (if named): a file that
    was not finished, or was never renamed into place."""
    if fd >= 0:
        os.close(fd)
    if leftover:
        with contextlib.suppress(OSError):
            os.unlink(leftover)
    _forget(leftover)
