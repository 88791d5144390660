"""The probe dialog, the search box and the help own their keys until closed:
typing into them (app keys included) and confirming changes only what they are for."""

from __future__ import annotations

import dataclasses
from typing import Any

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.app.help import HelpScreen
from bpftop.tui.app.probe_dialog import ProbeDialog
from tests.tui.fake_source import FakeSource

from .helpers import BASE, notifications, snapshot_of, tree_labels
from .test_probe_dialog import fake_completer

SIZE = (120, 36)
APP_KEYS = ("p", "r", "m", "space", "w", "b", "e", "f", "1", "4", "a", "G", "K", "L", "n", "q")
"""Keys the app binds, typed where they must be text (or nothing)."""


def make_app() -> tuple[BpftopApp, FakeSource]:
    snap = dataclasses.replace(snapshot_of(BASE), probes=("profile:hz:99",))
    source = FakeSource([snap])
    return BpftopApp(source, 1.0, completer=fake_completer()), source


def everything(app: BpftopApp, source: FakeSource) -> dict[str, Any]:
    """What a key could change, besides the dialog's own purpose."""
    state = app.state
    tree = app.views.tree_view
    return {
        "view": app.views.view_id,
        "paused": app.paused,
        "search": (state.pattern, state.filtering),
        "zoom": state.zoom_path,
        "frames": (state.frames, state.python_functions, state.inline_rows, state.show_idle),
        "baseline": state.baseline,
        "lines": app.show_lines,
        "source": (source.resets, source.modes, source.threads, source.source_lines),
        "probes": list(source.probe_switches),
        "tree": (tree_labels(app), tree.cursor_path, tree.following_hot),
        "running": app.is_running,
        "notices": [n.message for n in notifications(app)],
    }


async def test_probe_dialog_text_and_enter_switch_the_probe_and_nothing_else() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = everything(app, source)
        await pilot.press("p", *"offcpu", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeDialog)
        after = everything(app, source)
        assert after.pop("probes") == ["offcpu"]
        assert after.pop("notices") == [*before.pop("notices"), "switching to offcpu"]
        del before["probes"]
        assert after == before  # no search, no view change, no zoom
        assert app.state.match is None


async def test_probe_dialog_keeps_app_keys_as_text_and_esc_changes_nothing() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = everything(app, source)
        await pilot.press("p", *APP_KEYS, "enter")  # an invalid spec: Enter keeps the dialog
        assert isinstance(app.screen, ProbeDialog)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeDialog)
        assert everything(app, source) == before


async def test_search_box_owns_its_keys_and_enter_only_searches() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = everything(app, source)
        await pilot.press("slash", *APP_KEYS, "tab", "shift+tab")
        assert app.search_input.has_class("open") and app.views.view_id == "tree"
        assert app.search_input.value == "prm wbef14aGKLnq"
        await pilot.press(*["backspace"] * 20, *"leaf", "enter")
        await pilot.pause()
        after = everything(app, source)
        assert after.pop("search") == ("leaf", False)
        before.pop("search")
        after_tree, before_tree = after.pop("tree"), before.pop("tree")
        assert after_tree[0] == before_tree[0]  # the jump to the first match moved the cursor
        assert after == before


async def test_help_owns_its_keys_until_closed() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = everything(app, source)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press(*(k for k in APP_KEYS if k != "q"), "slash", "tab", "enter", "down")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        assert everything(app, source) == before
