"""Every unresolved reason has a one-line hint; a missing debug file names the
Debian package that would help."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from bpftop.symbols import hints
from bpftop.symbols.frame import Frame, Unresolved
from bpftop.symbols.hints import debug_package_for, hint

needs_dpkg = pytest.mark.skipif(shutil.which("dpkg") is None, reason="not a Debian system")


@pytest.mark.parametrize("reason", list(Unresolved))
def test_every_reason_has_a_one_line_hint(reason: Unresolved, tmp_path) -> None:
    text = hint(Frame(None, str(tmp_path / "libx.so"), 0x10, reason=reason))
    assert text and "\n" not in text and len(text) < 200


def test_resolved_frame_has_no_hint() -> None:
    assert hint(Frame("main", "/bin/x", 3)) == ""


def test_file_no_package_owns(built) -> None:
    text = hint(Frame(None, str(built.stripped), 0x10, reason=Unresolved.NO_SYMBOLS))
    assert text.startswith("s has no symbols") and "rebuild" in text


@needs_dpkg
def test_debian_file_names_its_debug_package() -> None:
    ls = Path("/usr/bin/ls")
    if not ls.exists():
        pytest.skip("no /usr/bin/ls")
    assert debug_package_for(str(ls)) == "coreutils-dbgsym"
    text = hint(Frame(None, str(ls), 0x4000, reason=Unresolved.NO_SYMBOLS))
    assert "install coreutils-dbgsym" in text and "ls has no symbols" in text


@needs_dpkg
def test_dbg_package_preferred_when_apt_knows_it() -> None:
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    if not Path(libc).exists():
        pytest.skip("no Debian libc")
    assert debug_package_for(libc) == "libc6-dbg"
    assert debug_package_for("/usr" + libc) == "libc6-dbg"  # usr-merged path too


def test_package_lookup_runs_once_per_file(monkeypatch, tmp_path) -> None:
    calls: list[list[str]] = []

    def fake_run(args: list[str]) -> str | None:
        calls.append(args)
        return "libfoo1:amd64: /x\n" if args[0] == "dpkg" else None

    monkeypatch.setattr(hints, "_run", fake_run)
    path = str(tmp_path / "libfoo.so.1")
    debug_package_for.cache_clear()
    try:
        for _ in range(5):
            assert debug_package_for(path) == "libfoo1-dbgsym"
        assert len(calls) == 2  # one dpkg -S, one apt-cache policy
    finally:
        debug_package_for.cache_clear()


def test_answers_are_kept_on_disk_until_dpkg_or_apt_changes(monkeypatch, tmp_path) -> None:
    calls: list[list[str]] = []

    def fake_run(args: list[str]) -> str | None:
        calls.append(args)
        return "libfoo1:amd64: /x\n" if args[0] == "dpkg" else None

    status, pkgcache = tmp_path / "status", tmp_path / "pkgcache.bin"
    status.write_text("")
    monkeypatch.setattr(hints, "_run", fake_run)
    monkeypatch.setattr(hints, "DATABASES", (str(status), str(pkgcache)))
    path = str(tmp_path / "libfoo.so.1")
    debug_package_for.cache_clear()
    try:
        assert debug_package_for(path) == "libfoo1-dbgsym" and len(calls) == 2
        debug_package_for.cache_clear()  # a later run: the answer is on disk
        assert debug_package_for(path) == "libfoo1-dbgsym" and len(calls) == 2
        pkgcache.write_text("")  # apt updated its lists: asked again
        debug_package_for.cache_clear()
        assert debug_package_for(path) == "libfoo1-dbgsym" and len(calls) == 4
        os.utime(status, ns=(1, 1))  # dpkg installed or removed something
        debug_package_for.cache_clear()
        assert debug_package_for(path) == "libfoo1-dbgsym" and len(calls) == 6
    finally:
        debug_package_for.cache_clear()


def test_hints_never_wait_for_the_package_lookup(monkeypatch, tmp_path) -> None:
    release = threading.Event()

    def slow_lookup(path: str) -> str | None:
        release.wait(5)
        return "libx1-dbgsym"

    monkeypatch.setattr(hints, "debug_package_for", slow_lookup)
    live = hints.Hints()
    frame = Frame(None, str(tmp_path / "libx.so.1"), 0x10, reason=Unresolved.NO_SYMBOLS)
    started = time.monotonic()
    first = live.hint(frame)
    assert time.monotonic() - started < 0.5, "the caller did not wait"
    assert first.startswith("libx.so.1 has no symbols") and "looking up" in first
    release.set()
    deadline = time.monotonic() + 5
    while "looking up" in live.hint(frame) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "install libx1-dbgsym" in live.hint(frame)
    gone = Frame(None, "", 0x10, reason=Unresolved.PROCESS_GONE)
    assert live.hint(gone) == hint(gone), "other reasons answer at once"


def test_answers_saved_at_once_are_all_kept() -> None:
    stamp = hints._databases_stamp()
    saves = [
        threading.Thread(target=hints._save, args=(stamp, f"/lib/x{i}.so", f"x{i}-dbgsym"))
        for i in range(20)
    ]
    for save in saves:
        save.start()
    for save in saves:
        save.join()
    assert hints._saved(stamp) == {f"/lib/x{i}.so": f"x{i}-dbgsym" for i in range(20)}
