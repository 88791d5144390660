"""Our exports opened by the tools people use: speedscope's schema, Go's pprof, Chromium."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from bpftop.symbols.frame import Frame
from bpftop.tui.formats.pprof import profile_pb2 as pb2
from bpftop.tui.formats.profile_io import read_saved, write_saved
from bpftop.tui.formats.saved import SavedProfile, from_tree
from bpftop.tui.model.profile import Profile
from tests.exports.consumers import ROOT, Chromium, go_pprof_raw, speedscope_schema
from tests.formats.test_saved import MAIN, META, sample_profile


def saved() -> SavedProfile:
    return from_tree(sample_profile().tree(), META)


def test_speedscope_export_matches_speedscopes_own_schema(tmp_path: Path) -> None:
    path = tmp_path / "p.speedscope.json"
    write_saved(saved(), path, "speedscope")
    schema = speedscope_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(json.loads(path.read_text()), schema)
    broken = json.loads(path.read_text())
    del broken["profiles"][0]["weights"]
    with pytest.raises(jsonschema.ValidationError):  # the schema really checks profiles
        jsonschema.validate(broken, schema)


def expected_names(profile: SavedProfile) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}
    for stack in profile.stacks:
        key = tuple(f.name for f in stack.frames)
        out[key] = out.get(key, 0) + stack.count
    return out


def test_go_pprof_reads_stacks_counts_and_metadata(tmp_path: Path) -> None:
    path = tmp_path / "p.pb.gz"
    profile = saved()
    write_saved(profile, path, "pprof", {"/bin/app": "00aa11bb"})
    stacks, text = go_pprof_raw(path)
    assert dict(stacks) == expected_names(profile)
    assert "PeriodType: cpu nanoseconds" in text
    assert "Comment: probe=cpu-clock 99 Hz" in text and "Comment: lost_events=1" in text
    assert "thread:[helper]" in text and "kernel_frames:[1]" in text
    assert "/bin/app 00aa11bb" in text  # the mapping's build-id


@pytest.fixture
def chromium() -> Iterator[Chromium]:
    browser = Chromium()
    yield browser
    browser.close()


def frame_box(browser: Chromium, name: str) -> dict[str, float]:
    box: dict[str, float] = browser.js(
        f"(() => {{ const g = [...document.querySelectorAll('g.f')]"
        f".find(g => g.dataset.n === {json.dumps(name)}); const r = g.querySelector('rect')"
        ".getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2, "
        "w: r.width}; })()"
    )
    return box


def test_chromium_hovers_zooms_and_searches_the_svg(tmp_path: Path, chromium: Chromium) -> None:
    path = tmp_path / "p.svg"
    write_saved(saved(), path, "svg")
    chromium.call("Page.enable")
    chromium.call("Page.navigate", url=path.as_uri())
    chromium.wait_event("Page.loadEventFired")
    assert chromium.js("document.querySelectorAll('g.f').length") == 9
    run = frame_box(chromium, "run")
    assert 0 < run["w"] < 1200 * 0.8  # 9 of 12 samples
    chromium.mouse("mouseMoved", run["x"], run["y"])
    details = chromium.js("document.getElementById('details').textContent")
    assert details.startswith("run in /bin/app (user): 9 samples (90.909 ms of CPU), 75.00%"), (
        details
    )
    chromium.mouse("mousePressed", run["x"], run["y"])
    chromium.mouse("mouseReleased", run["x"], run["y"])
    assert chromium.js("document.documentElement.getAttribute('data-zoom')") == "run"
    assert frame_box(chromium, "run")["w"] == pytest.approx(1200, abs=1)  # zoomed to full width
    hidden = "[...document.querySelectorAll('g.f')].filter(g => g.style.display === 'none')"
    hidden_names = ["helper", "libx.so+0x1a2b", "main"]  # the other group, run's sibling
    assert chromium.js(f"{hidden}.map(g => g.dataset.n).sort()") == hidden_names
    # Search through the page's own button and prompt, as a person would.
    search = chromium.js(
        "(() => { const r = document.getElementById('search').getBoundingClientRect(); "
        "return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()"
    )
    chromium.mouse("mousePressed", search["x"], search["y"])
    released = chromium.mouse("mouseReleased", search["x"], search["y"], wait=False)
    assert chromium.wait_event("Page.javascriptDialogOpening")["params"]["type"] == "prompt"
    chromium.call("Page.handleJavaScriptDialog", accept=True, promptText="^(fast|do_sys)")
    chromium.reply(released)
    assert chromium.js("document.documentElement.getAttribute('data-matched')") == "8"
    assert chromium.js("document.getElementById('matched').textContent") == "matched 66.7%"


def test_generated_protobuf_code_matches_our_profile_proto(tmp_path: Path) -> None:
    """profile_pb2.py/.pyi are what protoc makes of profile.proto (scripts/gen_proto.sh)."""
    folder = ROOT / "tui" / "formats" / "pprof"
    shutil.copy(folder / "profile.proto", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I.", "--python_out=.", "--pyi_out=.",
         "profile.proto"], cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("profile_pb2.py", "profile_pb2.pyi"):
        assert (tmp_path / name).read_text() == (folder / name).read_text(), (
            f"{name} is stale: run scripts/gen_proto.sh"
        )


def python_profile() -> SavedProfile:
    """Two lines of one Python function under a native frame, and a frozen module's."""
    profile = Profile()
    for line, count in ((25, 6), (26, 3)):
        burn = Frame(f"burn (/w/app.py:{line})", "/w/app.py", 0, file="/w/app.py", line=line)
        profile.add("python3", (MAIN, burn), count)
    frozen = "<frozen importlib._bootstrap>"
    profile.add("python3", (MAIN, Frame(f"_load ({frozen}:1)", frozen, 0, file=frozen, line=1)), 1)
    return from_tree(profile.tree(), META)


def test_python_functions_are_functions_with_their_file_in_pprof_and_speedscope(
    tmp_path: Path,
) -> None:
    """Go's pprof sees the function ``burn`` of /w/app.py (its lines on the
    locations), speedscope the name ``burn`` with file and line, as py-spy
    writes them; bpftop reads back its own ``QUALNAME (FILE:LINE)`` frames."""
    original = python_profile()
    pb, js = tmp_path / "p.pb.gz", tmp_path / "p.speedscope.json"
    write_saved(original, pb, "pprof")
    write_saved(original, js, "speedscope")
    stacks, text = go_pprof_raw(pb)
    assert stacks == {("main", "burn"): 9, ("main", "_load"): 1}
    assert "burn /w/app.py:25" in text and "burn /w/app.py:26" in text, text
    frames = json.loads(js.read_text())["shared"]["frames"]
    assert {"name": "burn", "file": "/w/app.py", "line": 26, "module": "/w/app.py"} in frames
    jsonschema.validate(json.loads(js.read_text()), speedscope_schema())
    for path in (pb, js):
        assert read_saved(path).stacks == original.stacks


def test_python_functions_carry_their_first_line_in_pprof(tmp_path: Path) -> None:
    """A Python frame's ``start_line`` (its code object's co_firstlineno) is its
    pprof function's ``start_line``: Go's pprof shows it (``s=20``), a native
    function has none, and bpftop reads it back."""
    profile = Profile()
    for line, count in ((25, 6), (26, 3)):
        burn = Frame(
            f"burn (/w/app.py:{line})", "/w/app.py", 0, file="/w/app.py", line=line, start_line=20
        )
        profile.add("python3", (MAIN, burn), count)
    original = from_tree(profile.tree(), META)
    assert {f.start_line for s in original.stacks for f in s.frames} == {0, 20}
    path = tmp_path / "p.pb.gz"
    write_saved(original, path, "pprof")
    _, text = go_pprof_raw(path)
    assert "burn /w/app.py:25 s=20" in text and "burn /w/app.py:26 s=20" in text, text
    decoded = pb2.Profile.FromString(gzip.decompress(path.read_bytes()))
    starts = {decoded.string_table[f.name]: f.start_line for f in decoded.function}
    assert starts == {"main": 0, "burn": 20}
    assert read_saved(path).stacks == original.stacks
