"""screenshots/ is what scripts/screenshot.py renders now; the recording the
screenshots show is one of the bundled demo workload, made by ``bpftop record``,
and the live sessions are real ones, the demo's and a Python program's."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from bpftop.tui.cli.files import saved_snapshots
from bpftop.tui.formats.snapshot_file import SessionFileError, read_session, write_session
from bpftop.tui.model.snapshot import Phase
from tests.tui.demo_fixture import demo_snapshot
from tests.tui.screens import (
    BEFORE,
    RECORDING,
    ROOT,
    SCREEN_SIZE,
    SCREENS,
    SESSIONS,
    screen_app,
)


def screenshot_script() -> ModuleType:
    """scripts/screenshot.py as a module (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location("screenshot", ROOT / "scripts/screenshot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_every_screenshot_is_what_the_script_renders(tmp_path: Path) -> None:
    written = await screenshot_script().render_all(tmp_path)
    kept = sorted(path.name for path in (ROOT / "screenshots").glob("*.svg"))
    assert sorted(path.name for path in written) == kept, "no screenshot left over or missing"
    stale = [
        p.name for p in written if p.read_bytes() != (ROOT / "screenshots" / p.name).read_bytes()
    ]
    assert not stale, f"run .venv/bin/python scripts/screenshot.py: {stale} changed"


def test_the_recordings_are_of_the_demo_workload() -> None:
    demo_functions = set(re.findall(r"\b(\w+)\(", (ROOT / "tests/workloads/demo.c").read_text()))
    for path in (RECORDING, BEFORE):
        data = json.loads(path.read_text())
        meta = data["bpftop"]
        assert meta["command"].startswith("build/workloads/demo ")
        assert meta["probe"] == "profile:hz:99"
        assert data["exporter"].startswith("bpftop ")
        ours = {f["name"] for f in data["shared"]["frames"] if f["module"].endswith("/demo")}
        assert {"main", "serve", "handle_request", "hash_payload", "mix_round"} <= ours
        assert ours - {"_start"} <= demo_functions, "every frame of the binary is a demo.c function"
        snap, _ = saved_snapshots(path)
        assert snap.stats.total_samples == int(meta["samples"]) > 200
        assert 9.5 < snap.stats.elapsed_s < 11


def test_the_live_screenshots_replay_real_live_sessions() -> None:
    """screenshots/live-*.json: a live session's ticks as the collector made them
    (BPF's maps and run statistics, the walker's tables, thread names), not a fixture."""
    for name, program in (("live-demo", "demo"), ("live-python", "py_mix.py")):
        snapshots, meta = read_session(SESSIONS[name])
        assert program in meta["command"] and float(meta["seconds_after_bpf"]) >= 10
        last = snapshots[-1]
        assert last.phase is Phase.SAMPLING and last.process is not None and last.process.pid > 0
        assert program in last.process.cmdline and last.process.cpu_percent > 0
        assert last.stats.probe == "profile:hz:99" and last.stats.elapsed_s > 10
        assert dict(last.stats.stack_quality).get("BPF .eh_frame walker", 0) > 0
        assert {m.name for m in last.maps} >= {"targets", "counts0", "stacks0"}
        assert last.overhead.bpf_runs_per_s > 0 and last.unwind is not None
        assert last.threads and sum(t.samples for t in last.threads) == last.stats.total_samples
        elapsed = [s.stats.elapsed_s for s in snapshots]
        assert elapsed == sorted(elapsed) and len(snapshots) > 10, "a tick a second"
    demo, _ = read_session(SESSIONS["live-demo"])
    assert [t.name for t in demo[-1].threads] == ["demo", "compressor"], "demo.c's two threads"
    python, _ = read_session(SESSIONS["live-python"])
    assert python[-1].python is not None and python[-1].python.walked > 0
    assert any(f.label.startswith("w30 (") for f in python[-1].hot), "Python functions"


def test_a_session_file_gives_back_what_was_written(tmp_path: Path) -> None:
    first, last = demo_snapshot(1), demo_snapshot(2, later=True)
    path = tmp_path / "s.json"
    write_session(path, [first, last], {"command": "demo"})
    snapshots, meta = read_session(path)
    assert meta == {"command": "demo"} and len(snapshots) == 2
    assert snapshots[1] == last, "every field, the call tree included"
    assert snapshots[0].stats == first.stats and snapshots[0].tree == last.tree
    path.write_text('{"format": "something else"}')
    with pytest.raises(SessionFileError, match="not a bpftop live session file"):
        read_session(path)


async def test_readme_captions_say_what_the_live_screenshots_show() -> None:
    readme = " ".join((ROOT / "README.md").read_text().split())
    demo, _ = read_session(SESSIONS["live-demo"])
    assert f"bundled demo workload, {demo[-1].stats.elapsed_s:.0f} s in" in readme, "as the header"
    quality = dict(demo[-1].stats.stack_quality)
    assert quality["BPF .eh_frame walker"] > 0 and any(q.startswith("perf_event") for q in quality)
    assert "Threads (`6`) shows the demo's two threads by name" in readme
    app = screen_app(SCREENS["tree"])
    async with app.run_test(size=SCREEN_SIZE) as pilot:
        await pilot.pause()
        tree = app.views.tree_view
        assert tree.rows[tree.cursor].node.label == "mix_round"
    assert "hot path opened by itself down to `mix_round`" in readme
    python, _ = read_session(SESSIONS["live-python"])
    assert python[-1].stats.left_out_samples > 0, "early samples left out, as the caption says"
    app = screen_app(SCREENS["python"])
    async with app.run_test(size=SCREEN_SIZE) as pilot:
        await pilot.pause()
        labels = [row.node.label for row in app.views.tree_view.rows]
    functions = [label for label in labels if label.startswith("w30 (")]
    assert functions and all(f.endswith("py_mix.py)") for f in functions), "no line numbers"
    assert "grouped by function" in readme
