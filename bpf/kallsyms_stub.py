"""A BCC compile that does not read the kernel's whole symbol table.

Owns :func:`kallsyms_stub`. BCC 0.26 reads all of /proc/kallsyms (122k lines
here) in every compile to learn two facts: whether ``bpf_probe_read_kernel``
and ``bpf_probe_read_user`` exist (its rewriter calls them, or the old
``bpf_probe_read`` on kernels without them). That is the kernel formatting
every line, then BCC parsing, sorting and hashing them: 0.96 -> 0.86 CPU-s a
compile without it (medians of 8 interleaved compiles, each on a thread of its
own; 1.35 -> 1.12 in 6 earlier ones on a busier machine).
Both helpers exist since Linux 5.5. On such a kernel the compiling thread gets
a mount namespace of its own for the compile (``unshare(CLONE_NEWNS)`` moves
only the calling thread, and gives it a working directory of its own, which
BCC changes while it compiles), where a file of the two lines is bound over
/proc/kallsyms: BCC gets the same answers. All mounts there are made private
first, so nothing of it is seen outside. The thread then goes back to the
process's namespace and working directory. Whatever fails on the way (no
CAP_SYS_ADMIN, an older kernel) leaves the compile as it was.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import re
import tempfile
from collections.abc import Iterator

CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
KALLSYMS = "/proc/kallsyms"
# What BCC looks up (any address but 0 means "exists"); since Linux 5.5.
STUB = "ffffffff81000000 T bpf_probe_read_kernel\nffffffff81000000 T bpf_probe_read_user\n"
SINCE = (5, 5)


def has_helpers(release: str) -> bool:
    """True for a kernel ``release`` (uname -r) with both helpers."""
    m = re.match(r"(\d+)\.(\d+)", release)
    return m is not None and (int(m[1]), int(m[2])) >= SINCE


@contextlib.contextmanager
def kallsyms_stub() -> Iterator[bool]:
    """On this thread, /proc/kallsyms is the two-line stub until the block ends
    (yields True), or the real one if that cannot be arranged (False)."""
    if not has_helpers(platform.release()):
        yield False
        return
    libc = ctypes.CDLL(None, use_errno=True)
    own_ns = os.open(f"/proc/{os.getpid()}/task/{os.getpid()}/ns/mnt", os.O_RDONLY)
    cwd = os.open(".", os.O_RDONLY)
    try:
        moved = _enter(libc)
        try:
            yield moved
        finally:
            if moved:
                _leave(libc, own_ns, cwd)
    finally:
        os.close(cwd)
        os.close(own_ns)


def _enter(libc: ctypes.CDLL) -> bool:
    """A namespace of this thread's own with the stub in place; False (in the
    process's namespace still) when the first step fails."""
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    with tempfile.NamedTemporaryFile("w", prefix="bpftop-kallsyms-") as stub:
        stub.write(STUB)
        stub.flush()
        if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) == 0:
            libc.mount(stub.name.encode(), KALLSYMS.encode(), None, MS_BIND, None)
    return True


def _leave(libc: ctypes.CDLL, own_ns: int, cwd: int) -> None:
    """Back to the process's namespace (which resets the working directory)."""
    if libc.setns(own_ns, CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "cannot go back to bpftop's mount namespace")
    os.fchdir(cwd)
