"""The live view: ``bpftop -p PID`` (or ``-a``, or ``-- COMMAND``) in the terminal.

Owns :func:`run_live`: it checks the options, starts the collector and
runs the Textual app on it until the user quits, a signal arrives or the
terminal goes away (:mod:`bpftop.tui.cli.shutdown`: within its deadline),
then stops the collector and ends a command bpftop started. Textual loads
only here, once the arguments are known to be good.
"""

from __future__ import annotations

import sys

from bpftop.bpf.perf_events import PerfSampler
from bpftop.tui.cli.gc_tuning import tune_gc
from bpftop.tui.cli.session import check, keep_stderr
from bpftop.tui.cli.shutdown import Shutdown, leave
from bpftop.tui.cli.tty import require_terminal, screen_exit_code
from bpftop.tui.collect.assemble import end_launched, make_collector
from bpftop.tui.collect.options import Options


def run_live(options: Options, early: PerfSampler | None = None) -> int:
    """The live view on ``options``, taking over ``early`` (perf_event sampling
    started before the imports) if any, until quit; the exit code."""
    sampler = check(options)
    if sampler is None:
        return 0
    require_terminal("without one, record: bpftop record -p PID -d SECONDS -o FILE")
    keep_stderr()
    from bpftop.tui.app.app import BpftopApp
    from bpftop.tui.app.terminal import terminal_driver
    from bpftop.tui.collect.probe_complete import ProbeCompleter

    apps: list[BpftopApp] = []  # the app, once made: a signal may come before

    def quit_app() -> None:
        for made in apps:
            made.request_exit()

    shutdown = Shutdown(quit_app, cut_code=0)
    shutdown.install()  # before a command is started held: it is never left stopped
    collector = make_collector(options, sampler, early)
    shutdown.launched = collector.launched
    completer = ProbeCompleter(pids=[collector.pid] if collector.pid else [])
    app = BpftopApp(
        collector,
        interval_s=options.interval_s,
        completer=completer,
        show_idle=options.idle,
        hot_min_pct=options.hot_min_pct,
    )
    apps.append(app)
    if shutdown.signum is not None:
        app.request_exit()
    tune_gc()
    with terminal_driver(shutdown.terminal_lost) as driver:
        app.driver_class = driver
        shutdown.before_cut = getattr(driver, "restore", lambda: None)
        try:
            app.run()
        finally:
            collector.stop(wait=False)
            end_launched(collector)
    if collector.compiling:  # BCC's compile runs on: do not wait for it (see leave)
        if app.error is not None:
            print(f"bpftop: {app.error}", file=sys.stderr)
            leave(app.error.exit_code)
        leave(screen_exit_code(app.crash, app.return_code))
    collector.stop()  # joins the compile's thread (it may have ended just now)
    if app.error is not None:
        raise app.error
    return screen_exit_code(app.crash, app.return_code)
