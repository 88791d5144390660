"""Errors a user must fix that only a root run can reach: a zombie target,
a program the verifier rejects, an output that vanishes while recording.
(BCC missing: tests/bpf/test_no_bcc.py; the errors any user can reach are in
tests/cli/test_errors.py.)"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.test_errors import assert_one_line_error, run_bpftop
from tests.conftest import BPFTOP, collecting

BAD_PROGRAM = r"""
#include <uapi/linux/ptrace.h>
#include <uapi/linux/bpf_perf_event.h>
BPF_HASH(targets, u32, u8, TARGETS_SIZE);
int on_cpu_sample(struct bpf_perf_event_data *ctx) {
    u32 key = 1;
    u8 *val = targets.lookup(&key);
    return *val;   /* no NULL check: the verifier must refuse this */
}
"""


def test_zombie_target(tmp_path: Path) -> None:
    """A process that has exited but not been reaped yet is not a target either."""
    zombie = subprocess.Popen(["true"])
    try:
        while Path(f"/proc/{zombie.pid}/stat").read_text().split()[2] != "Z":
            time.sleep(0.01)
        result = run_bpftop("record", "-p", str(zombie.pid), "-o", str(tmp_path / "x.folded"))
        assert_one_line_error(result, 3, "has exited")
    finally:
        zombie.wait()


def test_program_rejected_by_verifier(sleeper: int, tmp_path: Path) -> None:
    """A probe other than CPU sampling has no perf_event fallback: the error ends the run.
    (For CPU sampling see tests/bpf/test_early.py: it goes on with perf_event.)"""
    bad = tmp_path / "bad.bpf.c"
    bad.write_text(BAD_PROGRAM)
    result = run_bpftop(
        "record",
        "-p",
        str(sleeper),
        "--probe",
        "software:page-faults",
        "-o",
        str(tmp_path / "o.folded"),
        "-d",
        "1",
        env={"BPFTOP_BPF_SOURCE": str(bad)},
    )
    line = assert_one_line_error(result, 5, "rejected")
    assert "invalid mem access" in line or "map_value_or_null" in line, line
    assert not (tmp_path / "o.folded").exists()


def test_output_vanishes_during_recording_rescues_data(workloads: Path, tmp_path: Path) -> None:
    target = subprocess.Popen([str(workloads / "split"), "30"])
    outdir = tmp_path / "sub"
    outdir.mkdir()
    try:
        proc = subprocess.Popen(
            [
                str(BPFTOP),
                "record",
                "-p",
                str(target.pid),
                "-o",
                str(outdir / "o.folded"),
                "-d",
                "5",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60  # the compile: 3-10 s, more on a busy machine
        while not collecting(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert collecting(proc.pid), "record never attached its perf events"
        shutil.rmtree(outdir)
        _, stderr = proc.communicate(timeout=60)
    finally:
        target.kill()
        target.wait()
    result = subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)
    line = assert_one_line_error(result, 6, "saved to")
    rescue = Path(line.split("saved to ")[1].split(" instead")[0])
    try:
        assert "hot_a" in rescue.read_text()
    finally:
        rescue.unlink()


def test_a_refused_uprobe_says_nothing_of_its_own_on_stderr(
    workloads: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """libbcc prints "cannot attach uprobe, probe entry may not exist" on fd 2
    when the kernel refuses; bpftop's one line says it, libbcc's never shows."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    from bpftop.bpf.environment import choose_headers, import_bcc, kernel_source
    from bpftop.bpf.libbcc import attach_uprobe

    probed = workloads / "probed"
    with probed.open("rb") as stream:
        symtab = ELFFile(stream).get_section_by_name(".symtab")
        assert isinstance(symtab, SymbolTableSection)
        address = (symtab.get_symbol_by_name("slow_path") or [])[0]["st_value"]
    bcc = import_bcc()
    with kernel_source(choose_headers()):
        bpf = bcc.BPF(text=b"int on_hit(void *ctx) { return 0; }")  # type: ignore[attr-defined]
    try:
        capfd.readouterr()
        gone = subprocess.Popen(["true"])
        gone.wait()
        with pytest.raises(OSError, match="the kernel refused a uprobe"):
            attach_uprobe(bpf, str(probed).encode(), address, b"on_hit", gone.pid)
        assert capfd.readouterr().err == ""
    finally:
        bpf.cleanup()
