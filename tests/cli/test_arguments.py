"""Arguments that can never be right end in the one-line error docs/usage.md promises
(exit 2), not an internal error, an endless run or a silent default.

The target of most cases is a pid that is gone: before these checks existed
such a run got as far as "no process" (exit 3), so each case fails fast on
code that lets the value through."""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from bpftop.base.errors import UsageError
from bpftop.tui.cli import args as cli_args
from bpftop.tui.cli import record
from bpftop.tui.cli.main import main
from bpftop.tui.cli.pid_checks import is_kernel_thread, refuse_kernel_threads
from bpftop.tui.collect.options import DEFAULT_HZ, Recording


@pytest.fixture(scope="module")
def gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def one_line(capsys: pytest.CaptureFixture[str], code: int, argv: list[str], *words: str) -> str:
    assert main(argv) == code
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("bpftop: ") and "internal error" not in lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_a_pid_past_pid_max_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    huge = "99999999999999999999"
    one_line(capsys, 2, ["-p", huge], "out of range", f"1..{cli_args.pid_max()}")
    one_line(capsys, 2, ["record", "-p", huge, "-o", "x.folded"], "out of range")
    one_line(capsys, 2, ["-p", "0"], "out of range")
    one_line(capsys, 2, ["-p", "abc"], "invalid int value")


def test_pid_max_is_read_from_the_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    limit = tmp_path / "pid_max"
    limit.write_text("4242\n")
    monkeypatch.setattr(cli_args, "PID_MAX_FILE", limit)
    assert cli_args.pid_arg("4242") == 4242
    with pytest.raises(argparse.ArgumentTypeError, match=r"\(1\.\.4242\)"):
        cli_args.pid_arg("4243")
    monkeypatch.setattr(cli_args, "PID_MAX_FILE", tmp_path / "missing")
    assert cli_args.pid_max() == cli_args.PID_MAX_LIMIT == 4194304


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "soon"])
def test_durations_are_finite_and_positive(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, gone_pid: int, value: str
) -> None:
    out = str(tmp_path / "x.folded")
    one_line(capsys, 2, ["record", "-p", str(gone_pid), "-o", out, "-d", value], "-d/--duration")


@pytest.mark.parametrize("value", ["nan", "inf", "1e308", "61", "0", "-0.5"])
def test_intervals_are_finite_positive_and_bounded(
    capsys: pytest.CaptureFixture[str], gone_pid: int, value: str
) -> None:
    one_line(capsys, 2, ["-p", str(gone_pid), "-i", value], "-i/--interval")


def test_a_long_interval_says_the_most(capsys: pytest.CaptureFixture[str], gone_pid: int) -> None:
    one_line(capsys, 2, ["-p", str(gone_pid), "-i", "1e308"], "1e308 s is too long (at most 60 s)")


def test_a_short_interval_says_the_least(capsys: pytest.CaptureFixture[str], gone_pid: int) -> None:
    one_line(
        capsys, 2, ["-p", str(gone_pid), "-i", "0.0001"], "0.0001 s is too short (at least 0.1 s)"
    )


def test_intervals_of_a_tenth_to_a_minute_are_fine() -> None:
    live, _ = cli_args.build_parsers()
    assert live.parse_args(["-p", "1", "-i", "60"]).interval == 60.0
    assert live.parse_args(["-p", "1", "-i", "0.1"]).interval == 0.1


def test_hot_min_is_a_percentage(capsys: pytest.CaptureFixture[str], gone_pid: int) -> None:
    live, _ = cli_args.build_parsers()
    assert live.parse_args(["-p", "1"]).hot_min == 1.0
    assert live.parse_args(["-p", "1", "--hot-min", "2.5"]).hot_min == 2.5
    for bad in ("101", "-1", "nan", "x"):
        one_line(capsys, 2, ["-p", str(gone_pid), "--hot-min", bad], "--hot-min")


def test_an_empty_probe_spec_is_an_error(capsys: pytest.CaptureFixture[str], gone_pid: int) -> None:
    for empty in ("", "  "):
        one_line(capsys, 2, ["-p", str(gone_pid), f"--probe={empty}"], "empty probe spec")


def test_frequency_and_a_profile_probe_must_agree(
    capsys: pytest.CaptureFixture[str], gone_pid: int
) -> None:
    pid = str(gone_pid)
    line = one_line(capsys, 2, ["-p", pid, "-F", "99", "--probe", "profile:hz:199"], "-F 99")
    assert "two sampling rates" in line
    one_line(capsys, 3, ["-p", pid, "-F", "199", "--probe", "profile:hz:199"], "no process")
    settled = cli_args.parse_options(["-p", pid, "--probe", "profile:hz:499"], recording=False)
    assert settled.frequency == 499, "the probe's rate is the one recorded"
    assert cli_args.parse_options(["-p", pid], recording=False).frequency == DEFAULT_HZ
    other = cli_args.parse_options(["-p", pid, "-F", "7", "--probe", "offcpu"], recording=False)
    assert other.frequency == 7


def test_an_output_name_too_long_is_an_output_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    long_name = str(tmp_path / ("x" * 300 + ".folded"))
    line = one_line(capsys, 6, ["record", "-p", "1", "-o", long_name], "File name too long")
    assert line.startswith("bpftop: cannot write ")


def test_kernel_threads_are_recognized() -> None:
    assert is_kernel_thread(2), "pid 2 is kthreadd"
    assert not is_kernel_thread(1)
    assert not is_kernel_thread(cli_args.PID_MAX_LIMIT + 1)  # no such process: not a thread
    with pytest.raises(UsageError, match="pid 2 is a kernel thread"):
        refuse_kernel_threads([1, 2])


def test_record_refuses_a_kernel_thread(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before any sampler starts (``check`` stands in: no root or BPF needed)."""
    monkeypatch.setattr(record, "check", lambda args: SimpleNamespace())
    out = tmp_path / "x.folded"
    one_line(capsys, 2, ["record", "-p", "2", "-o", str(out), "-d", "1"], "kernel thread")
    assert not out.exists()


def test_gil_implies_no_early_samples() -> None:
    """perf_event samples cannot tell which thread holds the GIL: --gil waits for BPF."""
    for recording, more in ((False, []), (True, ["-o", "out.folded"])):
        gil = cli_args.parse_options(["-p", "1", "--gil", *more], recording=recording)
        assert gil.gil and not gil.early
        assert cli_args.parse_options(["-p", "1", *more], recording=recording).early


def test_options_are_typed_and_settled_once() -> None:
    """One frozen value from the command line: the command without its "--",
    record's own options apart, nothing left for later code to fill in."""
    options = cli_args.parse_options(
        ["-d", "2.5", "-o", "x.svg", "--names", "short", "--no-python", "--", "ls", "-l"],
        recording=True,
    )
    assert options.command == ("ls", "-l") and options.short_names
    assert not options.python_frames and options.early
    assert options.recording == Recording(Path("x.svg"), None, 2.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.frequency = 7  # type: ignore[misc]
    live = cli_args.parse_options(["-p", "1", "-i", "0.5", "--hot-min", "3"], recording=False)
    assert live.recording is None and (live.interval_s, live.hot_min_pct) == (0.5, 3.0)


def test_a_repeated_probe_is_an_error(capsys: pytest.CaptureFixture[str], gone_pid: int) -> None:
    """Before, the second --probe silently replaced the first."""
    two = ["--probe", "offcpu", "--probe", "uprobe:c:malloc"]
    one_line(capsys, 2, ["-p", str(gone_pid), *two], "--probe", "given twice", "offcpu")
    line = one_line(capsys, 2, ["record", "-p", str(gone_pid), "-o", "x.folded", *two], "twice")
    assert "uprobe:c:malloc" in line
