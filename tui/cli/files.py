"""The file side of the CLI: saving a recording, ``bpftop view`` and ``bpftop diff``.

``save_recording`` writes what ``record`` collected in the chosen format
(``-o -``: standard output); when that fails, the profile is saved under
/tmp and the error names both the failure and the rescue file.
``view FILE`` opens the live TUI on a saved profile; ``diff BASE NEW`` opens
it on NEW with BASE as the baseline, or with ``--folded`` prints the
two-count folded lines of flamegraph.pl's difference graphs (a reader that
closes the pipe early, ``| head``, ends it quietly); when the two
measured different things (samples vs nanoseconds, another probe) it warns
on stderr and in the header. Neither needs root: nothing here touches the
kernel.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bpftop.base.errors import OutputError
from bpftop.symbols.elf.disk_cache import read_build_id
from bpftop.tui.cli.args import file_parsers
from bpftop.tui.cli.gc_tuning import tune_gc
from bpftop.tui.cli.tty import require_terminal, screen_exit_code
from bpftop.tui.formats.atomic import STDOUT, write_new_file, write_output
from bpftop.tui.formats.profile_io import load_tree, read_saved, tree_writer
from bpftop.tui.formats.registry import format_for
from bpftop.tui.formats.saved import MAX_FRAMES, LoadedTree, ProfileMeta, SavedProfile
from bpftop.tui.formats.saved_folded import diff_lines
from bpftop.tui.model.derived import hot_from_tree
from bpftop.tui.model.snapshot import CollectionStats, Phase, ProcessInfo, Snapshot

if TYPE_CHECKING:
    from bpftop.tui.app.app import BpftopApp


def build_ids(modules: Iterable[str]) -> dict[str, str]:
    """The GNU build-id of each module that is a readable ELF file."""
    found = {}
    for module in set(modules):
        if not module.startswith("/"):
            continue
        try:
            with open(module, "rb") as stream:
                build_id = read_build_id(stream)
        except OSError:
            continue
        if build_id:
            found[module] = build_id
    return found


CLOSED_PIPE = 128 + 13
"""``diff --folded``'s exit code when its reader closed the pipe: a SIGPIPE's, as
git's and grep's (they die of it, silently)."""

RESCUE_DIR = Path("/tmp")
"""Where a recording goes when it cannot be written where asked."""


def save_recording(snap: Snapshot, meta: ProfileMeta, path: Path, fmt: str | None) -> None:
    """Write the recording; if ``path`` cannot be written, save under /tmp and say both."""
    chosen = format_for(path, fmt)
    fill = tree_writer(chosen, snap.tree, meta, snap.events_tree, build_ids)
    try:
        write_output(path, fill)
    except OutputError as err:
        pid = meta.pids[0] if meta.pids else 0
        prefix = f"bpftop-{pid}-{int(time.time())}-"
        try:
            rescue = write_new_file(RESCUE_DIR, prefix, chosen.suffixes[0], fill)
        except OutputError as failed:
            raise OutputError(
                f"{err.message}; saving it under {RESCUE_DIR} failed too ({failed.message})",
                err.hint,
            ) from None
        raise OutputError(
            f"{err.message}; the profile was saved to {rescue} instead", err.hint
        ) from None
    stats = snap.stats
    where = "standard output" if str(path) == STDOUT else str(path)
    early = stats.early_samples
    phases = f"{early} early perf_event + {stats.total_samples - early} BPF; " if early else ""
    print(
        f"bpftop: wrote {stats.total_samples} samples to {where} ({chosen.name}; {phases}"
        f"lost events {stats.lost_events}, dropped {stats.dropped_samples}, "
        f"failed stack reads {stats.failed_stacks})",
        file=sys.stderr,
    )
    if stats.left_out:
        reasons = ", ".join(f"{n} {reason}" for reason, n in stats.left_out)
        print(
            f"bpftop: left out {stats.left_out_samples} samples less complete than BPF's "
            f"({reasons})",
            file=sys.stderr,
        )


def saved_snapshot(loaded: LoadedTree, path: Path) -> Snapshot:
    """A snapshot showing a saved profile (phase SAVED, no live process)."""
    meta, tree = loaded.meta, loaded.tree
    stats = CollectionStats(
        probe=describe(meta),
        elapsed_s=meta.duration_ns / 1e9,
        total_samples=tree.total_count,
        lost_events=meta.lost_events,
        dropped_samples=meta.dropped_samples,
    )
    groups = [group.label for group in tree.children]
    process = ProcessInfo(
        pid=meta.pids[0] if meta.pids else 0,
        name=groups[0] if len(groups) == 1 else f"{len(groups)} groups",
        cmdline=meta.command, cpu_percent=0.0, rss_bytes=0, num_threads=len(groups),
        alive=False,
    )  # fmt: skip
    return Snapshot(
        seq=1, phase=Phase.SAVED, stats=stats, process=process, tree=tree,
        hot=hot_from_tree(tree, limit=500), message=_note(loaded, path),
        weight_unit="ns" if meta.timed else "",
        probe_events=(loaded.events or meta.samples) if meta.timed else 0,
    )  # fmt: skip


def _note(loaded: LoadedTree | SavedProfile, path: Path) -> str:
    """``FILE`` plus what reading it skipped or cut."""
    note = f"{path.name}"
    if loaded.skipped:
        note += f": {loaded.skipped:,} unreadable lines/samples skipped"
    if loaded.truncated:
        note += f"{',' if loaded.skipped else ':'} {loaded.truncated:,} stacks deeper than "
        note += f"{MAX_FRAMES} frames cut"
    return note


def describe(meta: ProfileMeta) -> str:
    """What the profile measured, in the header's probe slot: bpftop's probe, or what
    another tool's file says (sample type, period, name/exporter)."""
    parts = [meta.probe] if meta.probe else []
    if meta.sample_type:
        parts.append(meta.sample_type)
    if meta.period:
        parts.append(f"period {meta.period}")
    if meta.source:
        parts.append(f"from {meta.source}")
    return ", ".join(parts) or "unknown probe"


def _load(path: Path, stacks: bool = False) -> LoadedTree | SavedProfile:
    """The call tree (or with ``stacks`` every stack) of a saved profile."""
    tune_gc()  # millions of acyclic objects: the cyclic GC would rescan them again and again
    loaded = read_saved(path) if stacks else load_tree(path)
    if loaded.skipped or loaded.truncated:
        print(f"bpftop: {path}: {_note(loaded, path).partition(': ')[2]}", file=sys.stderr)
    return loaded


def _warn_mismatch(base: ProfileMeta, new: ProfileMeta, base_path: Path, new_path: Path) -> str:
    """A warning when the two profiles measured different things, else ""."""
    if base.unit != new.unit:
        what = f"{_unit(base)} vs {_unit(new)}"
    elif base.probe and new.probe and base.probe != new.probe:
        what = f"probe {base.probe} vs {new.probe}"
    elif base.sample_type != new.sample_type:
        what = f"{base.sample_type or 'samples'} vs {new.sample_type or 'samples'}"
    else:
        return ""
    warning = f"{base_path.name} and {new_path.name} measured different things ({what})"
    print(f"bpftop: warning: {warning}; the diff compares unlike counts", file=sys.stderr)
    return warning


def _unit(meta: ProfileMeta) -> str:
    return "nanoseconds" if meta.timed else "samples/events"


def view(args: argparse.Namespace) -> int:
    """``bpftop view FILE``: the TUI on a saved profile."""
    return _run_app(*saved_snapshots(args.file))


def diff(args: argparse.Namespace) -> int:
    """``bpftop diff BASE NEW``: the baseline-diff view, or ``--folded`` text."""
    if not args.folded:
        return _run_app(*saved_snapshots(args.new, args.base))
    base, new = _load(args.base, stacks=True), _load(args.new, stacks=True)
    _warn_mismatch(base.meta, new.meta, args.base, args.new)
    assert isinstance(base, SavedProfile) and isinstance(new, SavedProfile)
    lines = diff_lines(base, new)
    try:
        write_output(STDOUT, lambda out: out.writelines(f"{line}\n".encode() for line in lines))
    except OutputError as err:
        if not isinstance(err.__cause__, BrokenPipeError):
            raise
        from bpftop.tui.cli.shutdown import mute

        mute((1,))  # nothing left to flush can fail on it either
        return CLOSED_PIPE  # the reader has what it wanted (| head): quietly, as git and grep
    return 0


def view_app(snap: Snapshot, base: Snapshot | None) -> BpftopApp:
    """The app ``view`` (``base`` None) or ``diff`` runs (scripts/screenshot.py too)."""
    from bpftop.tui.app.app import BpftopApp
    from bpftop.tui.collect.static_source import StaticSource
    from bpftop.tui.model.baseline import Baseline

    baseline = Baseline(base.tree, base.hot) if base is not None else None
    return BpftopApp(StaticSource(snap), baseline=baseline)


def saved_snapshots(new: Path, base: Path | None = None) -> tuple[Snapshot, Snapshot | None]:
    """What ``view NEW`` (``base`` None) or ``diff BASE NEW`` shows: NEW's snapshot,
    and BASE's (the baseline) with the header warning when they measured unlike things."""
    before = _load(base) if base is not None else None
    loaded = _load(new)
    assert isinstance(loaded, LoadedTree)
    snap = saved_snapshot(loaded, new)
    if base is None:
        return snap, None
    assert isinstance(before, LoadedTree)
    warning = _warn_mismatch(before.meta, loaded.meta, base, new)
    if warning:
        snap = replace(snap, message=f"{snap.message}; warning: {warning}")
    return snap, saved_snapshot(before, base)


def _run_app(snap: Snapshot, base: Snapshot | None) -> int:
    require_terminal(
        "run it in a terminal" if base is None else "without one: bpftop diff --folded BASE NEW"
    )
    from bpftop.tui.app.terminal import terminal_driver
    from bpftop.tui.cli.shutdown import Shutdown

    app = view_app(snap, base)
    shutdown = Shutdown(app.request_exit, cut_code=0)  # the terminal went: nothing to keep
    shutdown.install()  # SIGTERM, SIGINT, SIGHUP: end as the live view does, terminal restored
    with terminal_driver(shutdown.terminal_lost) as driver:
        app.driver_class = driver
        shutdown.before_cut = getattr(driver, "restore", lambda: None)
        app.run()
    return screen_exit_code(app.crash, app.return_code)


def run_file_command(name: str, argv: Sequence[str]) -> int:
    """Run ``bpftop view`` or ``bpftop diff`` (``name``) with the arguments after it."""
    args = file_parsers()[name].parse_args(argv)
    return view(args) if name == "view" else diff(args)
