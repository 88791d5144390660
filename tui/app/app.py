"""The Textual app: shows the snapshots a ``SnapshotSource`` posts.

Snapshots arrive through ``SourceApp`` (one slot, coalesced ticks) on the app
thread; widgets are only touched there. What the user chose (selection,
zoom, search, filter, frames, baseline) lives in one ``ViewState``; the app
derives what the views show from it (on a worker when that is slow) and
hands it to the ``ViewSwitcher``, which draws the view on screen. The app's
keys are in ``keys``; its actions are here, in the order of the sections:
switching views, the user's choices, then pause, probe, help and export.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.events import DescendantFocus
from textual.notifications import SeverityLevel
from textual.widgets import Input, Static

from bpftop.base.errors import OutputError
from bpftop.tui.app.header import RateHistory, header_text, time_status
from bpftop.tui.app.help import HelpScreen
from bpftop.tui.app.key_bar import KeyBar
from bpftop.tui.app.keys import APP_BINDINGS
from bpftop.tui.app.probe_dialog import ProbeDialog, latest_first
from bpftop.tui.app.source_app import SourceApp
from bpftop.tui.app.view_switcher import ViewSwitcher
from bpftop.tui.collect.probe_complete import ProbeCompleter
from bpftop.tui.collect.snapshot_source import (
    ControlledSource,
    ProbeSwitching,
    ShortNames,
    SnapshotSource,
)
from bpftop.tui.model.baseline import Baseline
from bpftop.tui.model.derived import NodePath
from bpftop.tui.model.idle import idle_applies
from bpftop.tui.model.node_paths import HOT_MIN_PCT
from bpftop.tui.model.snapshot import CallNode, Snapshot
from bpftop.tui.model.viewstate import Derived, ViewState, Wanted, derive_view
from bpftop.tui.views.calltree import CallTreeView
from bpftop.tui.views.flame import FlameView
from bpftop.tui.views.navigation import VIEWS, breadcrumb_text, jump_to_match
from bpftop.tui.views.shown import Shown, placeholder_text
from bpftop.tui.views.threads import ThreadsView
from bpftop.tui.widgets.background import Background


def default_export_name(now: datetime | None = None) -> str:
    return f"bpftop-{(now or datetime.now()):%Y%m%d-%H%M%S}.folded"


class BpftopApp(SourceApp):
    """Live profile view: header, view tabs, one view at a time."""

    TITLE = "bpftop"

    CSS = """
    #header {
        height: 3; padding: 0 1; background: $boost;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    #crumbs { height: 1; padding: 0 1; }
    #views { height: 1fr; }
    #views > * { height: 1fr; border: round $panel; }
    #views > *:focus { border: round $accent; }
    #search { dock: bottom; display: none; }
    #search.open { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = APP_BINDINGS

    def __init__(
        self,
        source: SnapshotSource,
        interval_s: float = 1.0,
        *,
        export_path: str | Path | None = None,
        export_dir: str | Path | None = None,
        completer: ProbeCompleter | None = None,
        baseline: Baseline | None = None,
        show_idle: bool = False,
        hot_min_pct: float = HOT_MIN_PCT,
    ) -> None:
        """``baseline``: compare with it from the start (``bpftop diff``);
        ``show_idle``: idle Python samples shown from the start (--idle);
        ``hot_min_pct``: the hot path opens no child under this share (--hot-min)."""
        super().__init__(source)
        self.completer = completer or ProbeCompleter()
        self.probes_chosen: list[str] = []  # in the probe dialog, in order
        self._held_notes: list[tuple[str, str, SeverityLevel, float | None, bool]] = []
        self.interval_s = interval_s
        # absolute now: what w says is where the file is, whatever the directory later
        self.export_path = Path(export_path).absolute() if export_path is not None else None
        self.export_dir = Path(export_dir if export_dir is not None else ".").absolute()
        self.shown: Snapshot | None = None
        self.paused = False
        self.show_lines = False
        self.hot_min_pct = hot_min_pct
        self.state = ViewState()
        self.state.baseline = baseline
        self.state.show_idle = show_idle
        self.rates = RateHistory()
        self.last_derived: Derived | None = None
        self._derived_probe = ""  # the probe last_derived shows
        self.deriving: Background[Derived] = Background(self, "derive")
        self.writing: Background[int | OutputError] = Background(self, "write")
        self.told: set[str] = set()  # standing notices already said in a notification

    def compose(self) -> ComposeResult:
        yield Static(header_text(None, False, self.interval_s), id="header")
        yield Static(id="crumbs")
        yield ViewSwitcher(id="views")
        yield Input(placeholder="search: regex over function names (empty clears)", id="search")
        yield KeyBar(id="keys")

    @property
    def views(self) -> ViewSwitcher:
        return self.query_one("#views", ViewSwitcher)

    @property
    def search_input(self) -> Input:
        return self.query_one("#search", Input)

    # -- source wiring --------------------------------------------------------
    def on_mount(self) -> None:
        self.views.tree_view.placeholder = placeholder_text(None)
        self.views.tree_view.hot_min_pct = self.hot_min_pct
        self._refresh_crumbs()
        self.views.tree_view.focus()
        self.start_source()

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        self.query_one("#keys", KeyBar).refresh_keys()

    def on_unmount(self) -> None:
        super().on_unmount()
        self.deriving.close()

    def on_new_snapshot(self, snapshot: Snapshot) -> None:
        """A snapshot arrived (on the app thread): track the rate, show unless paused."""
        if self.latest is None or snapshot.seq != self.latest.seq:
            self.rates.add(snapshot.stats)
        for notice in snapshot.notices:  # standing facts: Diagnostics lists them; said once
            if notice not in self.told:
                self.told.add(notice)
                self.notify(f"{notice} (see Diagnostics)", title="note", timeout=8)
        self.latest = snapshot
        if not self.paused:
            self.show(snapshot)

    def on_reset(self) -> None:
        self.rates.reset()

    def on_time_mode(self) -> None:
        self._refresh_header()

    # -- drawing --------------------------------------------------------------
    def show(self, snapshot: Snapshot) -> None:
        """Render one snapshot into the header and the view on screen."""
        self.shown = snapshot
        self.state.idle_applies = idle_applies(snapshot.stats.probe)
        self._refresh_header()
        derived = self._derived()
        if derived is not None:
            self.views.track_functions(derived, snapshot.weight_unit)
        self.render_view()

    def _derived(self) -> Derived | None:
        """What the views show for the shown snapshot and the user's choices.

        With a filter or K/U active this walks the whole tree (seconds on a
        large profile), and grouping a large table by symbol takes tens of ms,
        so those are made on a worker; until it is done the views keep the last
        one made (never another probe's: none until the new probe's is made)."""
        if self.shown is None:
            return None
        snap, state = self.shown, self.state
        probe = snap.stats.probe
        found = state.cached(snap.tree)
        by_symbol = snap.hot_by_symbol
        if found is None and state.cheap(snap.tree, by_symbol is not None):
            found = state.derive(snap.tree, snap.hot, by_symbol)
        if found is None:
            tree, hot, wanted, job = snap.tree, snap.hot, state.wanted, state.derive_job()
            found = self.deriving.submit(
                (id(tree), wanted),
                lambda: derive_view(tree, hot, *job, by_symbol=by_symbol),
                lambda done: self._derive_done(tree, wanted, done, probe),
            )
            if found is not None:
                state.remember(tree, wanted, found)
        if found is not None:
            self.last_derived, self._derived_probe = found, probe
        return self.last_derived if self._derived_probe == probe else None

    def _derive_done(self, tree: CallNode, wanted: Wanted, done: Derived, probe: str) -> None:
        """A derived view made on the worker: remember it and show it."""
        self.state.remember(tree, wanted, done)
        self.last_derived, self._derived_probe = done, probe
        if self.shown is not None:
            self.show(self.shown)

    def render_view(self) -> None:
        """Redraw the view on screen from the shown snapshot and the view state."""
        derived = self._derived()
        if derived is not None and self.state.zoom:
            self.state.carry_zoom(derived.tree)
        self.views.draw(Shown(self.shown, derived, self.state, self.show_lines, self.thread))
        self._refresh_crumbs()

    def _refresh_header(self) -> None:
        status = time_status(self.shown, self.mode_label, self.thread)
        probe = self.shown.stats.probe if self.shown is not None else ""
        history, rate = self.rates.of(probe)
        text = header_text(self.shown, self.paused, self.interval_s, history, status, rate)
        self.query_one("#header", Static).update(text, layout=False)  # always three lines

    def _refresh_crumbs(self) -> None:
        tree = self.shown.tree if self.shown is not None else CallNode("all")
        names = ("Top", "Tree", "Callers", "Flame", "Diagnostics", "Threads")
        text = breadcrumb_text(names, self.views.index, self.state, tree, self.show_lines)
        self.query_one("#crumbs", Static).update(text, layout=False)

    # -- switching views and zooming -----------------------------------------
    def action_show_view(self, index: int) -> None:
        if isinstance(self.screen, HelpScreen) or not 0 <= index < len(VIEWS):
            return
        key = self.views.selected_key()  # what the view we leave has selected
        if key is not None:
            self.state.selected = key
        self.views.show_view(VIEWS[index][0], self.state.selected)
        self.render_view()

    def action_next_view(self, step: int) -> None:
        if isinstance(self.screen, ProbeDialog):  # Tab is the app's; in the dialog it completes
            self.screen.action_take_first()
            return
        if self.search_input.has_class("open"):
            return  # the search box owns the keys until it is closed
        self.action_show_view((self.views.index + step) % len(VIEWS))

    def on_call_tree_view_activated(self, message: CallTreeView.Activated) -> None:
        callers = self.views.callers_view
        if message.view is callers:
            if len(message.path) >= 2:
                self.state.selected = message.node.key
                callers.reveal(message.path[:1])
                self.render_view()
            return
        self._zoom_to(message.path)

    def on_threads_view_chosen(self, message: ThreadsView.Chosen) -> None:
        self.select_thread(None if message.tid == self.thread else message.tid)

    def on_flame_view_activated(self, message: FlameView.Activated) -> None:
        self._zoom_to(message.path)

    def _zoom_to(self, path: NodePath) -> None:
        if self.state.zoom_in(path):
            self.render_view()
            if self.views.view_id == "tree":
                self.views.tree_view.reveal(path)

    def action_zoom_out(self) -> None:
        if self.search_input.has_class("open"):
            self._close_search()
        elif self.state.zoom_out():
            self.render_view()
        elif self.state.pattern:
            self.state.set_search("")
            self.render_view()

    # -- the user's choices: search, filter, frames, file:line, baseline ------
    def action_search(self) -> None:
        box = self.search_input
        box.value = self.state.pattern
        box.add_class("open")
        box.focus()

    @on(Input.Submitted, "#search")
    def search_submitted(self, message: Input.Submitted) -> None:
        """Enter in the search box (only there: a dialog's own box is its own)."""
        error = self.state.set_search(message.value.strip())
        if error is not None:
            self.notify(error, title="search", severity="error")
            return
        self._close_search()
        self.render_view()
        if self.state.match is not None:
            self.action_jump(1)

    def _close_search(self) -> None:
        self.search_input.remove_class("open")
        self.views.on_screen.focus()

    def action_jump(self, step: int) -> None:
        if self.state.match is None:
            self.notify("no search: press / first", severity="warning")
            return
        view = self.views.selecting
        if view is not None and not jump_to_match(view, self.state.match, step):
            self.notify(f"no match for /{self.state.pattern}/ here", severity="warning")

    def action_toggle_filter(self) -> None:
        if self.state.match is None:
            self.notify("filter needs a search: press / first", severity="warning")
            return
        self.state.toggle_filter()
        if self.shown is not None:
            self.show(self.shown)

    def action_only_frames(self, only: str) -> None:
        shown = self.frames_step(self.state, only)
        self.notify(f"showing {shown} frames", title="frames")
        if self.shown is not None:
            self.show(self.shown)

    def action_toggle_python_functions(self) -> None:
        by_function = self.state.toggle_python_functions()
        self.notify(f"Python frames by {'function' if by_function else 'line'}", title="frames")
        if self.shown is not None:
            self.show(self.shown)

    def action_toggle_idle(self) -> None:
        shown = self.state.toggle_idle()
        self.notify(f"idle Python samples {'shown' if shown else 'hidden'}", title="idle")
        if self.shown is not None:
            self.show(self.shown)

    def action_toggle_inline(self) -> None:
        """The Top table: inline frames as rows of their own, or in their function."""
        rows = self.state.toggle_inline_rows()
        what = "inline frames as their own rows" if rows else "self time by function (symbol)"
        self.notify(what, title="top functions")
        if self.shown is not None:
            self.show(self.shown)

    def action_toggle_lines(self) -> None:
        """Show file:line beside function names; the source resolves lines only meanwhile."""
        self.show_lines = not self.show_lines
        if isinstance(self.source, ControlledSource):
            self.source.show_source_lines(self.show_lines)
        self.render_view()

    def action_toggle_short_names(self) -> None:
        """C++ names short (as perf shows them) or in full; counts start again."""
        if not isinstance(self.source, ShortNames):
            self.notify("a saved profile keeps the names it has", severity="warning")
            return
        short = not self.source.short_names
        self.source.use_short_names(short)
        what = "short (no parameters, no return type)" if short else "in full"
        self.notify(f"C++ names {what}; counts start again", title="names")

    def action_toggle_baseline(self) -> None:
        derived = self._derived()
        if self.state.baseline is not None:
            self.state.baseline = None
            self.notify("baseline cleared", title="baseline")
        elif derived is None:
            self.notify("nothing to compare yet", severity="warning")
            return
        else:
            self.state.baseline = Baseline(derived.tree, derived.hot)
            self.notify(
                f"frozen at {derived.tree.total_count:,} samples: Δ self % and Δ total % "
                "now show the change; b again clears it",
                title="baseline",
            )
        self.render_view()

    # -- pause, probe, help, export -------------------------------------------
    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused and self.latest is not None and self.latest is not self.shown:
            self.show(self.latest)
        else:
            self._refresh_header()

    def action_probe(self) -> None:
        """Open the probe dialog; Enter there switches the probe (each keeps its profile)."""
        if not isinstance(self.source, ProbeSwitching):
            self.notify("this source cannot switch probes", severity="warning")
            return
        source, shown = self.source, self.shown
        active = shown.stats.probe if shown is not None else ""
        used = latest_first(shown.probes if shown is not None else (), self.probes_chosen, active)

        def chosen(text: str | None) -> None:
            if text:
                self.probes_chosen.append(text)
                source.switch_probe(text)
                self.notify(f"switching to {text}", title="probe")

        self.push_screen(ProbeDialog(self.completer, used, active), chosen)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(), lambda _: self._release_notes())

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """As ``SourceApp``'s (plain text unless asked), except that while the key
        list is up a notification waits (toasts would be drawn over the list)
        and shows once it closes."""
        if self.screen_stack and isinstance(self.screen_stack[-1], HelpScreen):
            self._held_notes.append((message, title, severity, timeout, markup))
            return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def _release_notes(self) -> None:
        held, self._held_notes = self._held_notes, []
        for message, title, severity, timeout, markup in held:
            self.notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def export_target(self) -> Path:
        """Where ``w`` writes, as an absolute path (what the notification says)."""
        if self.export_path is not None:
            return self.export_path
        return self.export_dir / default_export_name()

    def action_write_folded(self) -> None:
        derived = self._derived()
        if derived is None:
            self.notify("nothing to write yet", severity="warning")
            return
        target = self.export_target()
        what = "zoomed " if self.state.zoom else ""
        what += "filtered " if self.state.filtering else ""
        tree = self.state.export_tree(derived.tree)

        def write() -> int | OutputError:  # on the worker: ~1 s at 40,000 deep stacks
            from bpftop.tui.formats.profile_io import write_folded  # ~35 ms: after the 1st frame

            try:
                return write_folded(tree, target)
            except OutputError as err:
                return err

        def written(lines: int | OutputError) -> None:
            if isinstance(lines, OutputError):
                self.notify(str(lines), title="write failed", severity="error", timeout=10)
            else:
                self.notify(f"wrote {lines} {what}stacks to {target}", title="folded stacks")

        done = self.writing.submit(target, write, written)
        if done is not None:
            written(done)
