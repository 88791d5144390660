"""screenshots/ is what scripts/screenshot.py renders now, and the recording the
screenshots show is one of the bundled demo workload, made by ``bpftop record``."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

from bpftop.tui.cli.files import saved_snapshots
from tests.tui.screens import BEFORE, RECORDING, ROOT


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
