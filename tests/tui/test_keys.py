"""Key help from one source: every binding of the app and its views has a help
row (``keys.KEY_HELP``), the ``?`` screen lists every key, and README's "Keys"
table is the one ``keys.markdown_table()`` makes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from textual.binding import Binding
from textual.dom import DOMNode

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.app.help import HelpScreen
from bpftop.tui.app.keys import (
    KEY_HELP,
    KEY_NAMES,
    action_name,
    bindings,
    key_groups,
    keys_text,
    markdown_table,
)
from tests.tui.fake_source import FakeSource

from .helpers import BASE, snapshot_of

README = Path(__file__).resolve().parents[2] / "README.md"


def own_bindings(nodes: list[DOMNode]) -> Iterator[tuple[str, Binding]]:
    """The bindings bpftop's classes declare, for each node on screen (and the app)."""
    seen: set[type] = set()
    for node in nodes:
        for cls in type(node).__mro__:
            if cls in seen or not cls.__module__.startswith("bpftop."):
                continue
            seen.add(cls)
            for binding in bindings([vars(cls).get("BINDINGS", [])]):
                yield cls.__name__, binding


async def on_screen_bindings() -> list[tuple[str, Binding]]:
    app = BpftopApp(FakeSource([snapshot_of(BASE)]), 1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        return list(own_bindings([app, *app.screen.walk_children(with_self=True)]))


async def test_every_binding_on_screen_has_a_help_row_that_lists_its_keys() -> None:
    found = await on_screen_bindings()
    classes = {where for where, _ in found}
    assert {"BpftopApp", "RowsView", "TopView", "FlameView", "ThreadsView"} <= classes
    rows = {action: row for row in KEY_HELP for action in row.actions.split()}
    for where, binding in found:
        row = rows.get(action_name(binding))
        assert row is not None, f"{where}: {binding.key} -> {binding.action}: no row in KEY_HELP"
        listed = {name for group in key_groups(row) for name in group}
        for key in binding.key.split(","):
            name = KEY_NAMES.get(key, key)
            assert name in listed, f"{where}: {key} ({binding.action}) missing from its help row"


def test_every_help_row_documents_bound_actions() -> None:
    bound = {action_name(binding) for binding in bindings()}
    for row in KEY_HELP:
        assert key_groups(row), f"no keys for {row.actions!r}"
        for action in row.actions.split():
            assert action in bound, f"help for {action!r}, which no binding has"


def test_readme_keys_table_is_made_from_the_bindings() -> None:
    table = re.search(r"^## Keys\n\n((?:\|.*\n)+)", README.read_text(), re.MULTILINE)
    assert table is not None, "README.md has no table under '## Keys'"
    assert table.group(1) == markdown_table(), "run: .venv/bin/python scripts/readme_keys.py"


async def test_help_screen_lists_every_key() -> None:
    app = BpftopApp(FakeSource([snapshot_of(BASE)]), 1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
    for row in KEY_HELP:
        for keys in keys_text(row).split(", "):  # "↑/k", "1-6", "Tab"
            assert re.search(rf"(^|\s){re.escape(keys)},?($|\s)", text, re.MULTILINE), keys
        assert row.what.replace("`", "").split()[0] in text
