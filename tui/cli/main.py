"""The ``bpftop`` command: picks the mode and turns every error into one line.

``bpftop -p PID`` opens the live view (:mod:`bpftop.tui.cli.live`);
``bpftop record -p PID -o FILE`` samples without a screen
(:mod:`bpftop.tui.cli.record`); ``bpftop view FILE`` and ``bpftop diff BASE
NEW`` open saved profiles (:mod:`bpftop.tui.cli.files`). Every error a user
must fix is a :class:`BpftopError`, printed as one line on stderr with a
non-zero exit code; a bug of ours is one line too, naming the log file with
its traceback (:mod:`bpftop.base.crash_log`; BPFTOP_DEBUG=1 raises it here).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from bpftop.base.crash_log import install_thread_hook, log_exception
from bpftop.base.errors import BpftopError, InternalError
from bpftop.tui.cli.args import parse_options
from bpftop.tui.cli.early_start import open_early
from bpftop.tui.cli.gc_tuning import gc_paused
from bpftop.tui.cli.output_path import check_writable
from bpftop.tui.cli.pid_checks import refuse_kernel_threads


def main(argv: Sequence[str] | None = None) -> int:
    """Run bpftop on ``argv`` (default: the process's arguments); the exit code."""
    with gc_paused():  # until tune_gc
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(args: list[str]) -> int:
    install_thread_hook()
    try:
        if args[:1] in (["view"], ["diff"]):
            from bpftop.tui.cli.files import run_file_command

            return run_file_command(args[0], args[1:])
        recording = args[:1] == ["record"]
        options = parse_options(args[1:] if recording else args, recording=recording)
        refuse_kernel_threads(options.pids)
        if options.recording is not None:
            check_writable(options.recording.output)  # before the first sample
        # Samples start now; the collector and its imports (numpy, ...) come after.
        early = open_early(options)
        import_numpy_quietly()
        from bpftop.tui.collect.process_watch import map_large_blocks

        map_large_blocks()  # before the first tick's big, short-lived arrays
        if early is not None:  # the first tick symbolizes the samples since:
            from bpftop.symbols.kallsyms import read_ahead

            read_ahead()  # the kernel's symbol table, read while the rest is imported
        try:
            if recording:
                from bpftop.tui.cli.record import run_record

                return run_record(options, early)
            from bpftop.tui.cli.live import run_live

            return run_live(options, early)
        finally:
            if early is not None:
                early.close()
    except BpftopError as err:
        print(f"bpftop: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: one line here, the traceback in the log
        if os.environ.get("BPFTOP_DEBUG"):
            raise
        where = log_exception("internal error", exc)
        print(f"bpftop: internal error: {exc!r} ({where}; please report it)", file=sys.stderr)
        return InternalError.exit_code


def import_numpy_quietly() -> None:
    """Import numpy with its OpenBLAS told to use one thread. Else it starts a
    worker thread per core at import, which spins ~0.05 CPU-s of every start
    (bpftop does no BLAS work). And with no huge pages for its arrays
    (``NUMPY_MADVISE_HUGEPAGE=0``): numpy asks for them on every array of 4 MB
    or more, and each first write into such an array then zeroes a whole 2 MB
    page (the count copies, the store's columns; ~3 ms a second of the live
    view's at scale went to that, perf). The variables are gone again afterwards,
    so a command bpftop starts (-- COMMAND) does not inherit them."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    told = {"OPENBLAS_NUM_THREADS": "1", "NUMPY_MADVISE_HUGEPAGE": "0"}
    told = {name: value for name, value in told.items() if name not in os.environ}
    os.environ.update(told)
    try:
        import numpy  # noqa: F401
    finally:
        for name in told:
            del os.environ[name]
