"""``--print-bpf`` prints the program BCC compiles: the walker is in it unless
``--unwind fp`` (which compiles the program without it, NO_WALKER)."""

from __future__ import annotations

from tests.cli.test_errors import run_bpftop


def test_walker_is_compiled_only_when_used() -> None:
    auto = run_bpftop("-p", "1", "--print-bpf")
    fp = run_bpftop("-p", "1", "--print-bpf", "--unwind", "fp")
    assert auto.returncode == 0 and fp.returncode == 0, (auto.stderr, fp.stderr)
    assert "int unwind_walk(" in auto.stdout and "#define NO_WALKER" not in auto.stdout
    assert "int unwind_walk(" not in fp.stdout and "#define NO_WALKER 1" in fp.stdout
    # the header that costs ~4 s of compile stays out (the struct is defined locally)
    assert "#include <uapi/linux/bpf_perf_event.h>" not in auto.stdout
