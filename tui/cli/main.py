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
from bpftop.tui.cli.args import build_parsers
from bpftop.tui.cli.early_start import open_early


def main(argv: Sequence[str] | None = None) -> int:
    """Run bpftop on ``argv`` (default: the process's arguments); the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] in (["view"], ["diff"]):
            from bpftop.tui.cli.files import run_file_command

            return run_file_command(args[0], args[1:])
        recording = args[:1] == ["record"]
        parsed = build_parsers()[1].parse_args(args[1:]) if recording else None
        parsed = parsed or build_parsers()[0].parse_args(args)
        # Samples start now; the collector and its imports (numpy, ...) come after.
        parsed.early_perf = open_early(parsed)
        try:
            if recording:
                from bpftop.tui.cli.record import run_record

                return run_record(parsed)
            from bpftop.tui.cli.live import run_live

            return run_live(parsed)
        finally:
            if parsed.early_perf is not None:
                parsed.early_perf.close()
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
