"""Errors that must not vanish: a bug of ours is one line naming the log file
that holds its traceback (the CLI's, the collector thread's, a background
view job's, the app's), and fallbacks catch only what they are for."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bpftop.base import crash_log
from bpftop.base.errors import BpftopError
from bpftop.bpf.probes import ProbeKind, ProbeSpec
from bpftop.bpf.raw import RawTick
from bpftop.tui.cli import live as cli_live
from bpftop.tui.cli import main as cli_main
from bpftop.tui.collect.collector import Collector
from bpftop.tui.collect.probe_complete import ProbeCompleter


@pytest.fixture(autouse=True)
def log_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(crash_log, "_written", [])  # this test's errors only
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("BPFTOP_DEBUG", raising=False)
    return tmp_path / "cache" / "bpftop" / "bpftop.log"


def test_an_internal_error_names_its_log_and_the_log_has_the_traceback(
    log_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def buggy(options: object, early: object) -> int:
        raise ZeroDivisionError("injected")

    monkeypatch.setattr(cli_live, "run_live", buggy)  # main imports it when it runs
    assert cli_main.main(["-p", "1"]) == 70
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("bpftop: internal error: ZeroDivisionError('injected')")
    assert f"traceback in {log_home}" in line
    text = log_home.read_text()
    assert "Traceback (most recent call last)" in text and "in buggy" in text
    assert stat.S_IMODE(log_home.stat().st_mode) == 0o600


def test_the_log_is_never_written_through_a_link(log_home: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    log_home.parent.mkdir(parents=True)
    log_home.symlink_to(victim)
    where = crash_log.log_exception("test", ValueError("x"))
    assert where.startswith(f"no traceback log: {log_home}")
    assert victim.read_text() == "keep\n"


def test_the_cli_line_stays_one_line_when_the_log_cannot_be_written(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": "/proc/no-such-dir"}
    code = (
        "import bpftop.tui.cli.main as m, bpftop.tui.cli.live as v; "
        "v.run_live = lambda options, early: 1 / 0; "
        "raise SystemExit(m.main(['-p', '1']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert result.returncode == 70
    (line,) = result.stderr.strip().splitlines()
    assert "ZeroDivisionError" in line and "no traceback log: /proc/no-such-dir" in line


class BrokenSampler:
    """Loads with a bug (no kernel needed): the collector's catch-all must log it."""

    header_note = ""
    spec = ProbeSpec(ProbeKind.PROFILE, number=99)
    probe = "profile:hz:99"
    loaded = False
    unwind = "fp"

    def load(self) -> None:
        raise KeyError("injected in load")

    def close(self) -> None:
        pass

    def map_usage(self) -> tuple[()]:
        return ()

    def prog_stats(self) -> None:
        return None

    def drain(self) -> RawTick:
        raise AssertionError("never reached")


def test_a_collector_bug_keeps_its_traceback(log_home: Path) -> None:
    errors: list[BpftopError] = []
    collector = Collector(os.getpid(), BrokenSampler(), 0.1)  # type: ignore[arg-type]
    collector.start(lambda _: None, errors.append)
    assert collector.finished.wait(10)
    collector.stop()
    (error,) = errors
    assert "internal error in the collector: KeyError('injected in load')" in str(error)
    assert error.exit_code == 70
    assert f"traceback in {log_home}" in str(error)
    assert "in load" in log_home.read_text()


def test_an_unreadable_file_is_not_called_stripped() -> None:
    pytest.importorskip("bcc")
    from bpftop.bpf.probes import ProbeSpecError
    from bpftop.bpf.resolve import function_symbols, resolve

    with pytest.raises(ProbeSpecError, match="cannot read the symbols of /no/such/file"):
        function_symbols("/no/such/file")
    with pytest.raises(ProbeSpecError) as info:
        resolve(ProbeSpec(ProbeKind.USDT, target="/etc/passwd", provider="p", name="n"), [])
    assert "could not read /etc/passwd: not an ELF file" in str(info.value)
    with pytest.raises(ProbeSpecError, match="not an ELF file"):
        resolve(ProbeSpec(ProbeKind.UPROBE, target="/etc/passwd", name="main"), [])


def test_probe_completion_survives_an_unreadable_file() -> None:
    def unreadable(path: str, pid: int) -> list[tuple[str, int]]:
        raise BpftopError(f"cannot read the symbols of {path}")

    completer = ProbeCompleter(pids=[1], files=lambda pid: ["/x/lib"], symbols=unreadable)
    assert completer.complete("uprobe:lib:ma") == ()


def test_a_thread_that_dies_leaves_its_traceback(
    log_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import threading

    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    crash_log.install_thread_hook()

    def die() -> None:
        raise OSError("thread bug")

    worker = threading.Thread(target=die, name="bpftop-unwind")
    worker.start()
    worker.join()
    line = capsys.readouterr().err.strip()
    assert line.startswith("bpftop: internal error in thread bpftop-unwind: OSError('thread bug')")
    assert f"traceback in {log_home}" in line and "\n" not in line
    assert "in die" in log_home.read_text()
