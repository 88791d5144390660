"""``record -o FILE``: refused before anything samples when FILE cannot be written.

Owns :func:`check_writable`, which ``main`` calls before the first perf_event
sample (before, ``-o /proc/x`` sampled the whole ``-d`` and then failed). It
asks the file system, not only the permission bits: root passes every access
check, yet /proc or a read-only file system refuse a file only when it is made.
"""

from __future__ import annotations

import os
from pathlib import Path

from bpftop.base.errors import OutputError
from bpftop.tui.formats.atomic import STDOUT


def check_writable(path: Path) -> None:
    """Fail before sampling, not after, when the output cannot be written."""
    if str(path) == STDOUT:
        return
    try:
        _check_path(path)
    except OSError as err:  # a name too long, a loop of links, ...
        reason = err.strerror or repr(err)
        raise OutputError(f"cannot write {path}: {reason}", "choose another path") from None


def _check_path(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory", "give a file name with -o")
    if not parent.is_dir():
        raise OutputError(
            f"cannot write {path}: no directory {parent}", "create it or choose another path"
        )
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise OutputError(f"cannot write {path}: permission denied", "choose a writable path")
    if not path.exists() or path.is_file():  # (a device or FIFO is written in place)
        _try_create(parent)


def _try_create(directory: Path) -> None:
    """Create and remove a file in ``directory``, as the write will (a temp file
    beside the output): root passes every access check, yet /proc or a read-only
    file system refuse the file only when it is made."""
    name = directory / f".bpftop-probe-{os.getpid()}-{os.urandom(4).hex()}"
    os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    os.unlink(name)
