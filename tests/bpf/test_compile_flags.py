"""What the compiler flags leave out of the loaded program: no debug info, so
no BTF (``-g0`` after BCC's ``-g``, bpf/program_text.compiler_flags), while
every handler, walker and walker copy still verifies."""

from __future__ import annotations

import ctypes
import platform

from bpftop.bpf.probe_copies import AHEAD
from bpftop.bpf.program import CpuSampler

_SYS_BPF = {"x86_64": 321, "aarch64": 280}[platform.machine()]
_BPF_OBJ_GET_INFO_BY_FD = 15
# struct bpf_prog_info (uapi/linux/bpf.h): byte offsets of the fields read here.
_INFO_SIZE, _BTF_ID_AT, _NR_LINE_INFO_AT = 160, 128, 148


def _btf_of(prog_fd: int) -> tuple[int, int]:
    """(btf_id, nr_line_info) of a loaded program, from the kernel."""
    info = (ctypes.c_uint8 * _INFO_SIZE)()
    attr = (ctypes.c_uint32 * 4)(prog_fd, _INFO_SIZE)
    ctypes.c_uint64.from_buffer(attr, 8).value = ctypes.addressof(info)
    libc = ctypes.CDLL(None, use_errno=True)
    got = libc.syscall(_SYS_BPF, _BPF_OBJ_GET_INFO_BY_FD, ctypes.byref(attr), ctypes.sizeof(attr))
    assert got == 0, f"BPF_OBJ_GET_INFO_BY_FD failed: errno {ctypes.get_errno()}"
    btf_id = ctypes.c_uint32.from_buffer(info, _BTF_ID_AT).value
    return btf_id, ctypes.c_uint32.from_buffer(info, _NR_LINE_INFO_AT).value


def test_the_program_is_loaded_without_btf() -> None:
    with CpuSampler(99, unwind="auto") as sampler:
        sampler.load()
        assert sampler._copies is not None
        for program in AHEAD:  # the walkers' copies too
            sampler._copies.ensure(program)
        funcs = dict(sampler._bpf.funcs)
        btf = {name: _btf_of(fn.fd) for name, fn in funcs.items()}
    assert {b"on_cpu_sample", b"unwind_walk", b"python_walk", b"python_walk_kp"} <= funcs.keys()
    assert len(funcs) >= 20
    assert btf == dict.fromkeys(funcs, (0, 0))
