"""The live view: ``bpftop -p PID`` (or ``-a``, or ``-- COMMAND``) in the terminal.

Owns :func:`run_live`: it checks the arguments, starts the collector and
runs the Textual app on it until the user quits or a signal arrives, then
stops the collector and ends a command bpftop started. Textual loads only
here, once the arguments are known to be good.
"""

from __future__ import annotations

import argparse
import sys

from bpftop.bpf.errors import InternalError
from bpftop.tui.cli.gc_tuning import tune_gc
from bpftop.tui.cli.session import (
    check,
    end_launched,
    keep_stderr,
    make_collector,
    on_signals,
)
from bpftop.tui.cli.tty import require_terminal


def run_live(args: argparse.Namespace) -> int:
    """The live view on the parsed arguments, until quit; the exit code."""
    sampler = check(args)
    if sampler is None:
        return 0
    require_terminal("without one, record: bpftop record -p PID -d SECONDS -o FILE")
    keep_stderr()
    from bpftop.tui.app.app import BpftopApp  # Textual loads only for the live view
    from bpftop.tui.app.terminal import terminal_driver
    from bpftop.tui.collect.probe_complete import ProbeCompleter

    collector = make_collector(args, sampler, args.interval)
    completer = ProbeCompleter(pids=[collector.pid] if collector.pid else [])
    show_idle = getattr(args, "idle", False)
    app = BpftopApp(
        collector,
        interval_s=args.interval,
        completer=completer,
        show_idle=show_idle,
        hot_min_pct=getattr(args, "hot_min", 1.0),
    )
    tune_gc()
    with terminal_driver() as driver:
        app.driver_class = driver
        on_signals(lambda: app.call_later(app.exit))
        try:
            app.run()
        finally:
            collector.stop()
            end_launched(args)
    if app.error is not None:
        raise app.error
    if app.crash is not None or app.return_code:
        print(
            f"bpftop: {app.crash or 'internal error: the app ended with an error'}", file=sys.stderr
        )
        return InternalError.exit_code
    return 0
