"""A terminal that goes away under a program: what closing a tmux pane or an ssh session does.

    python3 pty_closer.py [--no-ctty] [--wait S] -- COMMAND [ARGS...]

Runs COMMAND on a new pseudo-terminal (120x40, TERM=xterm-256color) in a
session of its own, reads everything it draws, and prints ``pid N`` once it
runs. When a line (or end of file) arrives on stdin it closes the terminal's
master side, so the kernel hangs the terminal up: COMMAND's writes to it fail
with EIO and its reads see end of file. With the terminal as COMMAND's
controlling terminal (the default) the kernel also sends it SIGHUP, as a shell
or tmux would pass on; ``--no-ctty`` leaves the terminal uncontrolled, so only
the EIO and end of file tell COMMAND (a program run under ``setsid``, or whose
shell was killed outright). Then it waits up to S seconds (default 10) for
COMMAND and prints ``ended SECONDS RETURNCODE`` (seconds from the close;
a negative code is the signal that ended it) or ``running`` if it did not end;
it never kills COMMAND itself.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import threading
import time


def _drain(master: int, stop: threading.Event) -> None:
    """Read what COMMAND draws, so it never blocks on a full terminal, until
    ``stop`` (a read in progress would keep the master open past its close)."""
    while not stop.is_set():
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                if not os.read(master, 65536):
                    return
            except OSError:
                return


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-ctty", action="store_true")
    parser.add_argument("--wait", type=float, default=10.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))

    def controlled() -> None:  # in the child, after setsid
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen(
        command,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        preexec_fn=None if args.no_ctty else controlled,
    )
    os.close(slave)
    stop = threading.Event()
    drain = threading.Thread(target=_drain, args=(master, stop), daemon=True)
    drain.start()
    print(f"pid {proc.pid}", flush=True)
    sys.stdin.readline()
    stop.set()
    drain.join()
    os.close(master)
    closed = time.monotonic()
    try:
        code = proc.wait(timeout=args.wait)
    except subprocess.TimeoutExpired:
        print("running", flush=True)
        return 0
    print(f"ended {time.monotonic() - closed:.3f} {code}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
