"""Ending in time (tui/cli/shutdown, tui/app/terminal): a stop that hangs is cut
within the bound, the cut ends a held command and leaves no half-written file,
and a terminal that goes away is noticed by its failed writes and its hang-up.

The cuts run in a child Python (they end the process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from bpftop.tui.app.terminal import HangupWatch, LossReport, TerminalOutput
from bpftop.tui.cli.shutdown import Shutdown, mute
from bpftop.tui.cli.tty import hung_up

ENDS_S = 5.0  # the bound is GRACE_S + a little; the bug this guards against is "never"


def run_child(code: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(code))
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, cwd=tmp_path
    )
    return done, time.monotonic() - start


def test_a_stop_that_hangs_is_cut_and_ends_the_held_command(tmp_path: Path) -> None:
    done, took = run_child(
        """
        import os, signal, subprocess, time
        from bpftop.tui.cli.shutdown import Shutdown

        held = subprocess.Popen(["sleep", "60"])
        os.kill(held.pid, signal.SIGSTOP)  # as a command started held is
        print(held.pid, flush=True)
        shutdown = Shutdown(lambda: None, grace_s=0.5)
        shutdown.cut_message = "bpftop: cut"
        shutdown.launched = held
        shutdown.install()
        os.kill(os.getpid(), signal.SIGTERM)
        while True:  # a stop that never comes
            time.sleep(0.01)
        """,
        tmp_path,
    )
    assert took < ENDS_S
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert done.stderr.strip() == "bpftop: cut"
    held = int(done.stdout.split()[0])
    assert not Path(f"/proc/{held}").exists() or _zombie(held), "the held command was left"


def _zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_a_cut_while_writing_keeps_the_old_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    (tmp_path / "out.folded").write_text("old 1\n")
    done, took = run_child(
        """
        import os, signal, threading, time
        from bpftop.tui.cli.shutdown import Shutdown
        from bpftop.tui.formats.atomic import write_output

        shutdown = Shutdown(lambda: None, grace_s=0.5)
        shutdown.install()
        shutdown.writing("out.folded")

        def fill(out):
            out.write(b"new 1\\n")
            os.kill(os.getpid(), signal.SIGINT)  # while writing
            while True:  # a write that never ends (a slow disk)
                time.sleep(0.01)

        write_output("out.folded", fill)
        """,
        tmp_path,
    )
    assert took < ENDS_S
    assert done.returncode == 128 + signal.SIGINT, done.stderr
    assert done.stderr.strip() == "bpftop: stopped while writing out.folded: not written"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["child.py", "out.folded"]
    assert (tmp_path / "out.folded").read_text() == "old 1\n"


def test_record_keeps_what_it_was_asked_for_after_the_first_signal(tmp_path: Path) -> None:
    done, _ = run_child(
        """
        import os, signal, time
        from bpftop.tui.cli.shutdown import Shutdown
        from bpftop.tui.formats.atomic import write_output

        stopped = []
        shutdown = Shutdown(lambda: stopped.append(1), keep_first=True, grace_s=0.3)
        shutdown.install()
        os.kill(os.getpid(), signal.SIGTERM)  # sampling is asked to stop...
        time.sleep(1.0)  # ...and the last tick takes its time
        shutdown.writing("out.folded")
        time.sleep(0.5)
        write_output("out.folded", lambda out: out.write(b"new 1\\n"))
        print(len(stopped))
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"], "stop is asked once"
    assert (tmp_path / "out.folded").read_text() == "new 1\n"


def test_a_second_signal_cuts_record_short(tmp_path: Path) -> None:
    done, took = run_child(
        """
        import os, signal, time
        from bpftop.tui.cli.shutdown import Shutdown

        shutdown = Shutdown(lambda: None, keep_first=True, grace_s=0.3)
        shutdown.cut_message = "bpftop: not written"
        shutdown.install()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1.0)  # not cut
        print("still here", flush=True)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
        """,
        tmp_path,
    )
    assert took < 1.0 + ENDS_S
    assert done.stdout.strip() == "still here"
    assert done.returncode == 128 + signal.SIGTERM and done.stderr.strip() == "bpftop: not written"


def test_a_failed_write_to_the_terminal_reports_the_loss_once_and_drops_the_rest() -> None:
    master, slave = os.openpty()
    lost: list[int] = []
    loss = LossReport(lambda: lost.append(1))
    tty = os.fdopen(slave, "w", encoding="utf-8")
    output = TerminalOutput(tty, loss)
    output.write("drawn\n")
    output.flush()
    assert os.read(master, 100) == b"drawn\r\n" and not lost
    os.close(master)  # the terminal goes: writes fail with EIO
    for _ in range(3):
        assert output.write("x" * 10_000) == 10_000
        output.flush()
    assert lost == [1]
    mute((slave,))  # what is left to flush goes to /dev/null now
    tty.close()


def test_the_hang_up_watch_notices_a_closed_terminal() -> None:
    master, slave = os.openpty()
    seen = threading.Event()
    watch = HangupWatch((slave,), LossReport(seen.set))
    try:
        assert not seen.wait(0.5), "a live terminal is not lost"
        assert not hung_up(slave)
        os.close(master)
        assert seen.wait(ENDS_S), "the hang-up went unnoticed"
        assert hung_up(slave)
    finally:
        watch.stop()
        os.close(slave)


def test_mute_points_only_hung_up_descriptors_at_dev_null(tmp_path: Path) -> None:
    master, slave = os.openpty()
    kept = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT)
    try:
        os.close(master)
        mute((slave, kept))
        assert os.write(slave, b"unseen") == 6  # EIO before
        assert os.readlink(f"/proc/self/fd/{slave}") == os.devnull
        assert os.readlink(f"/proc/self/fd/{kept}") == str(tmp_path / "log")
    finally:
        os.close(slave)
        os.close(kept)


def test_a_second_request_does_not_stop_again() -> None:
    stops: list[int] = []
    shutdown = Shutdown(lambda: stops.append(1), grace_s=60)
    shutdown.request(signal.SIGTERM)
    shutdown.request(signal.SIGINT)
    assert stops == [1] and shutdown.signum == signal.SIGTERM
    assert shutdown._timer is not None, "the deadline runs"
    shutdown._timer.cancel()  # this test process is not to be cut
