"""The loader a process runs, as its program names it (PT_INTERP), for the
hold where a launched command's libraries are mapped (no kernel needed)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from bpftop.bpf.loader_watch import interpreter_of
from bpftop.bpf.resolve import function_symbols


def test_a_dynamic_programs_loader_is_its_pt_interp_with_the_hook() -> None:
    loader = interpreter_of(os.getpid())
    out = subprocess.run(["readelf", "-lW", "/proc/self/exe"], capture_output=True, text=True)
    assert loader is not None and f"[Requesting program interpreter: {loader}]" in out.stdout
    assert any(name == "_dl_debug_state" for name, _ in function_symbols(loader))


def test_a_static_program_or_a_gone_process_has_none(tmp_path: Path) -> None:
    source = tmp_path / "static.c"
    source.write_text("#include <unistd.h>\nint main(void) { pause(); return 0; }\n")
    program = tmp_path / "static"
    subprocess.run(["gcc", "-static", "-o", str(program), str(source)], check=True)
    for command in ([str(program)], ["/bin/sleep", "5"]):
        child = subprocess.Popen(command)
        try:
            time.sleep(0.1)  # exec'd
            loader = interpreter_of(child.pid)
            assert (loader is None) == (command[0] == str(program)), (command, loader)
        finally:
            child.kill()
            child.wait()
        assert interpreter_of(child.pid) is None  # gone
