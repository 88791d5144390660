"""``bpftop view`` and ``bpftop diff``: the live app on saved profiles (Pilot), and the CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.cli.files import saved_snapshot
from bpftop.tui.collect.static_source import StaticSource
from bpftop.tui.formats.profile_io import load_tree, write_saved
from bpftop.tui.formats.saved import ProfileMeta, from_tree
from bpftop.tui.model.baseline import Baseline
from bpftop.tui.model.snapshot import Snapshot
from tests.conftest import BPFTOP
from tests.tui.demo_fixture import demo_snapshot

from .helpers import crumbs, header, notifications, tree_labels, tree_line

SIZE = (120, 36)
NAMES = {"folded": "demo.folded", "speedscope": "demo.speedscope.json", "pprof": "demo.pb.gz"}
META = ProfileMeta(command="/opt/demo/bin/demo --port 8080", pids=(4242,), probe="profile:hz:99")


def saved_file(folder: Path, fmt: str, later: bool = False) -> Path:
    path = folder / (("later-" if later else "") + NAMES[fmt])
    write_saved(from_tree(demo_snapshot(later=later).tree, META), path, fmt)
    return path


def loaded(path: Path) -> Snapshot:
    return saved_snapshot(load_tree(path), path)


def cursor_label(app: BpftopApp) -> str:
    return tree_labels(app)[app.views.tree_view.cursor]


@pytest.mark.parametrize("fmt", sorted(NAMES))
async def test_every_view_works_on_a_saved_profile(fmt: str, tmp_path: Path) -> None:
    snap = loaded(saved_file(tmp_path, fmt))
    assert snap.tree.total_count == demo_snapshot().tree.total_count
    out = tmp_path / "out"
    out.mkdir()
    app = BpftopApp(StaticSource(snap), export_dir=out)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "saved profile" in header(app) and "demo" in header(app)
        await pilot.press("e", "up", "enter")  # tree: zoom into hash_payload
        assert tree_labels(app)[:2] == ["hash_payload", "mix_round"]
        await pilot.press("3")  # callers of the selection
        assert [row.node.label for row in app.views.callers_view.rows][:1] == ["hash_payload"]
        await pilot.press("4")  # flame graph, same zoom
        assert app.views.flame_view.rows[0][0].node.label == "hash_payload"
        await pilot.press("w")  # export of the zoomed subtree
        (written,) = out.glob("*.folded")
        assert all(";handle_request;hash_payload" in line for line in written.read_text().split(
            "\n") if line)  # fmt: skip
        await pilot.press("escape", "2", "slash", *"write", "enter")  # search
        assert "/write/" in crumbs(app) and cursor_label(app) == "write"
        await pilot.press("r")  # a saved profile cannot reset: it says so
        assert "cannot reset" in notifications(app)[-1].message


async def test_diff_opens_with_base_as_the_baseline(tmp_path: Path) -> None:
    base = loaded(saved_file(tmp_path, "pprof"))
    new = loaded(saved_file(tmp_path, "pprof", later=True))
    app = BpftopApp(StaticSource(new), baseline=Baseline(base.tree, base.hot))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e")
        assert f"Δ vs baseline of {base.tree.total_count:,}" in crumbs(app)
        parse = tree_labels(app).index("parse_headers")
        assert "+2.6  +16.2" in tree_line(app, parse)  # as the live baseline shows it


def run_bpftop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BPFTOP), *args], capture_output=True, text=True, timeout=60)


def test_diff_folded_prints_two_counts_per_stack(tmp_path: Path) -> None:
    base, new = saved_file(tmp_path, "folded"), saved_file(tmp_path, "speedscope", later=True)
    done = run_bpftop("diff", "--folded", str(base), str(new))
    assert done.returncode == 0, done.stderr
    rows = [line.rsplit(" ", 2) for line in done.stdout.splitlines()]
    assert all(len(row) == 3 for row in rows)
    assert sum(int(r[1]) for r in rows) == demo_snapshot().tree.total_count
    assert sum(int(r[2]) for r in rows) == demo_snapshot(later=True).tree.total_count
    assert any(int(r[1]) != int(r[2]) for r in rows)


def test_view_and_diff_reject_bad_files_in_one_line(tmp_path: Path) -> None:
    missing = run_bpftop("view", str(tmp_path / "nope.folded"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr
    svg = tmp_path / "x.svg"
    write_saved(from_tree(demo_snapshot().tree, META), svg, "svg")
    done = run_bpftop("diff", str(svg), str(svg))
    assert done.returncode == 2 and "cannot be read back" in done.stderr
    usage = run_bpftop("view")
    assert usage.returncode == 2 and "FILE" in usage.stderr


def test_view_without_a_terminal_is_refused_at_once(tmp_path: Path) -> None:
    # capture_output: stdout is a pipe. Textual would spin there until killed.
    done = run_bpftop("view", str(saved_file(tmp_path, "folded")))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "bpftop: this view needs a terminal (stdin is not one) (run it in a terminal)"
    )
