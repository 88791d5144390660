"""The CLI's writers: ``record``'s save (``-o -``, a device that fails, the
/tmp rescue) and ``diff --folded`` to a standard output that fails."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from bpftop.base.errors import OutputError
from bpftop.tui.cli import files
from bpftop.tui.cli.files import save_recording
from bpftop.tui.cli.output_path import check_writable
from bpftop.tui.formats.saved import snapshot_meta
from bpftop.tui.model.snapshot import Snapshot
from tests.conftest import BPFTOP
from tests.formats.folded_oracle import folded_lines
from tests.formats.test_output_files import char_device, is_char_device
from tests.tui.demo_fixture import demo_snapshot

SNAP = demo_snapshot()
META = snapshot_meta(SNAP, frequency_hz=99, start_ns=1, end_ns=2, version="test")


def folded_text(snap: Snapshot) -> list[str]:
    """The snapshot's folded lines, sorted (a folded file's line order means nothing)."""
    return sorted(folded_lines(snap.tree))


def test_record_to_dash_writes_stdout_and_reports_on_stderr(
    capfd: pytest.CaptureFixture[str],
) -> None:
    check_writable(Path("-"))  # no "no directory" or "permission denied" up front
    save_recording(SNAP, META, Path("-"), None)
    out, err = capfd.readouterr()
    assert sorted(out.splitlines()) == folded_text(SNAP) and out.endswith("\n")
    assert err.startswith(f"bpftop: wrote {SNAP.stats.total_samples} samples to standard output")


@pytest.fixture
def rescue_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    rescue = tmp_path / "rescue"
    rescue.mkdir()
    monkeypatch.setattr(files, "RESCUE_DIR", rescue)
    return rescue


def test_a_full_device_fails_and_says_where_the_profile_went(
    tmp_path: Path, rescue_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    full = char_device(tmp_path, "full", 7)
    with pytest.raises(OutputError) as info:
        save_recording(SNAP, META, full, "folded")
    message = info.value.message
    assert message.startswith(f"cannot write {full}: No space left on device; ")
    assert "full" in info.value.hint and info.value.exit_code == 6
    (rescue,) = rescue_dir.iterdir()
    assert f"the profile was saved to {rescue} instead" in message
    assert rescue.name.startswith("bpftop-4242-") and rescue.name.endswith(".folded")
    assert sorted(rescue.read_text().splitlines()) == folded_text(SNAP)
    assert stat.S_IMODE(rescue.stat().st_mode) == 0o600, "command lines may hold secrets"
    assert is_char_device(full, 7)
    assert "wrote" not in capfd.readouterr().err


def test_when_the_rescue_fails_too_both_failures_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "RESCUE_DIR", tmp_path / "gone")
    full = char_device(tmp_path, "full", 7)
    with pytest.raises(OutputError) as info:
        save_recording(SNAP, META, full, "pprof")
    message = info.value.message
    assert message.startswith(f"cannot write {full}: No space left on device; ")
    assert f"saving it under {tmp_path / 'gone'} failed too" in message
    assert "No such file or directory" in message and "\n" not in message


def test_diff_folded_to_a_full_stdout_is_a_one_line_error(tmp_path: Path) -> None:
    base, new = tmp_path / "base.folded", tmp_path / "new.folded"
    base.write_text("app;main;a 3\n")
    new.write_text("app;main;a 1\napp;main;b 2\n")
    ok = subprocess.run(
        [str(BPFTOP), "diff", "--folded", str(base), str(new)], capture_output=True, text=True
    )
    assert ok.returncode == 0 and ok.stdout == "app;main;a 3 1\napp;main;b 0 2\n", ok
    with open("/dev/full", "wb") as full:
        failed = subprocess.run(
            [str(BPFTOP), "diff", "--folded", str(base), str(new)],
            stdout=full, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    assert failed.returncode == 6, failed.stderr
    assert failed.stderr.splitlines() == [
        "bpftop: cannot write to standard output: No space left on device "
        "(the disk or device is full; free some space or choose another place)"
    ]


@pytest.mark.parametrize("where", ["/proc/x.folded", "/proc/self/x.folded"])
def test_an_output_the_file_system_refuses_is_refused_before_sampling(
    where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """/proc passes the permission checks (as root, all pass) but makes no file:
    before, record sampled the whole -d and then said so."""
    from bpftop.tui.cli import main as cli_main

    def no_sampling(args: object) -> None:
        raise AssertionError("sampling started")

    monkeypatch.setattr(cli_main, "open_early", no_sampling)
    assert cli_main.main(["record", "-p", "1", "-d", "5", "-o", where]) == 6
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"bpftop: cannot write {where}: "), err
    assert not list(Path(where).parent.glob(".bpftop-probe-*"))


def test_the_writability_check_leaves_nothing_behind(tmp_path: Path) -> None:
    check_writable(tmp_path / "new.folded")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", ["pprof", "speedscope"])
def test_a_saved_time_profile_shows_its_events_in_view(tmp_path: Path, fmt: str) -> None:
    """An off-CPU pprof opened in view said "3.010 s of time in 0 events"."""
    from dataclasses import replace

    from bpftop.symbols.frame import Frame
    from bpftop.tui.formats.profile_io import load_tree, write_saved
    from bpftop.tui.formats.saved import NANOSECONDS, ProfileMeta, from_tree
    from bpftop.tui.model.profile import Profile

    profile, events = Profile(), Profile()
    for name, ns, blocks in (("sleep_long", 2_000_000_000, 2), ("sleep_short", 1_010_000_000, 3)):
        frames = [Frame("main", "/bin/app", 0), Frame(name, "/bin/app", 0)]
        profile.add("app", frames, ns)
        events.add("app", frames, blocks)
    meta = ProfileMeta(
        probe="offcpu", start_ns=1, end_ns=3_010_000_001, samples=5, unit=NANOSECONDS,
        version="0.1.0",
    )  # fmt: skip
    saved = from_tree(profile.tree(), meta, events.tree())
    assert sorted(s.events for s in saved.stacks) == [2, 3]
    path = tmp_path / f"p.{fmt}"
    write_saved(saved, path, fmt)
    snap = files.saved_snapshot(load_tree(path), path)
    assert snap.probe_events == 5 and snap.tree.total_count == 3_010_000_000
    if fmt == "pprof":  # the events per stack count, not the metadata's total
        write_saved(replace(saved, meta=replace(meta, samples=0)), path, fmt)
        assert files.saved_snapshot(load_tree(path), path).probe_events == 5
