"""bpftop's own way into libbcc: the one process-wide lock, and the uprobe attach call.

:data:`LIBBCC_LOCK` serializes the libbcc calls that are not safe to run on
two threads at once: BCC compiles (LLVM and BCC's module state: two at once
crashed libbcc 0.26; a collector that stopped may leave its compile running
on a helper thread while a new one starts) and probe attach/detach (BCC's
legacy attach path writes tracefs event files and may enter the target's
mount namespace). It is re-entrant: an attach made while a compile holds it
(loading handlers) goes on. BPF map reads and writes are not locked: libbcc
passes them straight to the bpf(2) system call, which the kernel serializes
(the unwind feed writes tables while the collector drains).

:func:`attach_uprobe` calls ``bpf_attach_uprobe`` with all seven of its C
arguments. BCC 0.26's Python binding declares six, so libbcc reads the
seventh, ``ref_ctr_offset``, from whatever is on the stack; here it is 0 for
a plain uprobe and a USDT probe's semaphore offset otherwise. With it the
kernel raises the semaphore in every process the uprobe is installed in and
lowers it again when the uprobe goes (detach, close, or bpftop's death,
SIGKILL included): another tracer's count survives, nothing is left raised.
"""

from __future__ import annotations

import ctypes as ct
import functools
import threading
from typing import Any

from bpftop.bpf.capture import capture_stderr
from bpftop.bpf.environment import import_bcc

LIBBCC_LOCK = threading.RLock()


@functools.cache
def _attach_function() -> Any:
    """libbcc's bpf_attach_uprobe through a handle of our own (declaring seven
    arguments here leaves BCC's own declarations alone); loaded at first use,
    after ``import_bcc`` said whether libbcc is there."""
    function = ct.CDLL("libbcc.so.0", use_errno=True).bpf_attach_uprobe
    function.restype = ct.c_int
    function.argtypes = [
        ct.c_int,  # program fd
        ct.c_int,  # BPF_PROBE_ENTRY (0) or BPF_PROBE_RETURN (1)
        ct.c_char_p,  # event name
        ct.c_char_p,  # binary path
        ct.c_uint64,  # file offset
        ct.c_int,  # pid (-1: every process)
        ct.c_uint32,  # ref_ctr_offset: file offset of a USDT semaphore, 0: none
    ]
    return function


def attach_uprobe(
    bpf: Any,
    path: bytes,
    address: int,
    fn_name: bytes,
    pid: int,
    *,
    retprobe: bool = False,
    ref_ctr_offset: int = 0,
) -> bytes:
    """Attach ``fn_name`` at ``address`` (a virtual address in ``path``, as BCC's
    ``attach_uprobe(addr=...)`` takes it) and record it in ``bpf.uprobe_fds``
    exactly as BCC would (so ``detach_uprobe_event`` and ``cleanup`` undo it).
    Returns the event name; raises OSError when the kernel refuses."""
    bcc = import_bcc()
    kprobe_type = bcc.BPF.KPROBE  # type: ignore[attr-defined]
    with LIBBCC_LOCK:
        fn = bpf.load_func(fn_name, kprobe_type)
        binary, offset = bpf._check_path_symbol(path, b"", address, pid)
        event = bpf._get_uprobe_evname(b"r" if retprobe else b"p", binary, offset, pid)
        bpf._check_probe_quota(1)
        with capture_stderr():  # libbcc's own "cannot attach uprobe, ..." line: the error says it
            fd = _attach_function()(
                fn.fd, int(retprobe), event, binary, offset, pid, ref_ctr_offset
            )
        if fd < 0:
            err = ct.get_errno()
            raise OSError(err, f"the kernel refused a uprobe on {path.decode()} at 0x{address:x}")
        bpf._add_uprobe_fd(event, fd)
    return bytes(event)
