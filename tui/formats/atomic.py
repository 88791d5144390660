"""Writing a file atomically: a temp file beside the target, renamed into place.

A failed write leaves the old file as it was and no temp file behind, and
raises ``OutputError`` with the reason.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from bpftop.bpf.errors import OutputError


def atomic_write(path: str | os.PathLike[str], fill: Callable[[IO[bytes]], object]) -> None:
    """Let ``fill`` write a temp file beside ``path``, then move it into place."""
    target = Path(path)
    tmp_name: str | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as out:
            fill(out)
        os.chmod(tmp_name, 0o644)  # mkstemp makes 0600; profiles are not secret
        os.replace(tmp_name, target)
        tmp_name = None
    except OSError as err:
        raise OutputError(
            f"cannot write {target}: {err.strerror or err}",
            "choose a writable file or directory for the output",
        ) from err
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
