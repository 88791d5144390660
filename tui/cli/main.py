"""The ``bpftop`` command: picks the mode and turns every error into one line.

``bpftop -p PID`` opens the live view (:mod:`bpftop.tui.cli.live`);
``bpftop record -p PID -o FILE`` samples without a screen
(:mod:`bpftop.tui.cli.record`); ``bpftop view FILE`` and ``bpftop diff BASE
NEW`` open saved profiles (:mod:`bpftop.tui.cli.files`). Every error a user
must fix is a :class:`BpftopError`, printed as one line on stderr with a
non-zero exit code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from bpftop.bpf.errors import BpftopError
from bpftop.tui.cli.args import build_parsers, settle
from bpftop.tui.cli.live import run_live
from bpftop.tui.cli.record import run_record


def main(argv: Sequence[str] | None = None) -> int:
    """Run bpftop on ``argv`` (default: the process's arguments); the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["record"]:
            return run_record(settle(build_parsers()[1].parse_args(args[1:])))
        if args[:1] in (["view"], ["diff"]):
            from bpftop.tui.cli.files import run_file_command

            return run_file_command(args[0], args[1:])
        return run_live(settle(build_parsers()[0].parse_args(args)))
    except BpftopError as err:
        print(f"bpftop: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: still one line (BPFTOP_DEBUG=1 shows the traceback)
        if os.environ.get("BPFTOP_DEBUG"):
            raise
        print(
            f"bpftop: internal error: {exc!r} (please report it; BPFTOP_DEBUG=1 shows where)",
            file=sys.stderr,
        )
        return 70
