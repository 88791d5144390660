"""Failures on the app's side are seen: a background job that raises says so
on screen (the view is not current), and a crash of the app is logged and
ends the live view with a non-zero exit."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpftop.base import crash_log
from bpftop.base.errors import UsageError
from bpftop.tui.app import app as app_module
from bpftop.tui.app import terminal
from bpftop.tui.app.app import BpftopApp
from bpftop.tui.cli import files, live, shutdown, tty
from bpftop.tui.collect.options import Options

from .helpers import SIZE, demo_app, notifications


@pytest.fixture(autouse=True)
def log_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(crash_log, "_written", [])  # this test's errors only
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "bpftop" / "bpftop.log"


def boom() -> int:
    raise ValueError("job bug")


@pytest.mark.parametrize("sync_wait_s", [1.0, 0.0])
async def test_a_failed_background_job_is_reported(log_file: Path, sync_wait_s: float) -> None:
    app, _ = demo_app()
    done: list[int] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.deriving.sync_wait_s = sync_wait_s
        app.deriving.submit("k", boom, done.append)  # type: ignore[arg-type]
        for _ in range(50):
            await pilot.pause(0.02)
            if notifications(app):
                break
        (note,) = [n for n in notifications(app) if n.title == "internal error"]
        assert "derive job failed, the view is not up to date: ValueError('job bug')" in (
            note.message
        )
        assert f"traceback in {log_file}" in note.message
        assert not app.deriving.busy, "the next job can run"
    assert not done
    assert "job bug" in log_file.read_text()


async def test_an_app_crash_is_logged_and_kept(log_file: Path) -> None:
    app, _ = demo_app()

    def crash() -> None:
        raise ZeroDivisionError("app bug")

    app.action_reset = crash  # type: ignore[method-assign]
    with pytest.raises(ZeroDivisionError):
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press("r")
            await pilot.pause()
    assert app.return_code == 1
    assert app.crash is not None and "ZeroDivisionError('app bug')" in app.crash
    assert f"traceback in {log_file}" in app.crash
    assert "app bug" in log_file.read_text()


class CrashedApp:
    """Stands in for BpftopApp: ``run`` ends the way Textual ends after a crash."""

    error = None
    crash = "internal error: the app crashed: ZeroDivisionError() (traceback in X)"
    return_code = 1

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def run(self) -> None:
        pass

    def call_later(self, *args: object) -> None:
        pass

    def request_exit(self) -> None:
        pass


class Stopped:
    pid = 1
    compiling = False
    launched = None

    def stop(self, wait: bool = True) -> None:
        pass


@contextlib.contextmanager
def no_terminal(on_lost: object = None) -> Iterator[type]:
    yield object


def test_the_live_view_exits_non_zero_after_a_crash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(live, "check", lambda args: object())
    monkeypatch.setattr(live, "make_collector", lambda *args: Stopped())
    monkeypatch.setattr(shutdown.Shutdown, "install", lambda self: None)
    monkeypatch.setattr(live, "tune_gc", lambda: None)
    monkeypatch.setattr(live, "keep_stderr", lambda: None)  # would bypass capsys
    monkeypatch.setattr(app_module, "BpftopApp", CrashedApp)
    monkeypatch.setattr(terminal, "terminal_driver", no_terminal)
    monkeypatch.setattr(tty, "has_terminal", lambda: True)
    assert live.run_live(Options(pids=(1,))) == 70
    assert capsys.readouterr().err.strip() == f"bpftop: {CrashedApp.crash}"


def test_view_exits_70_after_a_crash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Not 0: an internal error is always 70 (view said 0 after NO_COLOR's crash)."""
    saved = tmp_path / "p.folded"
    saved.write_text("main;work 3\n")
    monkeypatch.setattr(files, "view_app", lambda snap, base: CrashedApp())
    monkeypatch.setattr(terminal, "terminal_driver", no_terminal)
    monkeypatch.setattr(tty, "has_terminal", lambda: True)
    monkeypatch.delenv("TERM", raising=False)
    assert files.run_file_command("view", [str(saved)]) == 70
    assert capsys.readouterr().err.strip() == f"bpftop: {CrashedApp.crash}"


def test_the_live_view_refuses_to_run_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest's stdin is not a terminal; the collector must not even be made.
    monkeypatch.setattr(live, "check", lambda args: object())
    monkeypatch.setattr(live, "make_collector", lambda *args: pytest.fail("collector made"))
    with pytest.raises(UsageError, match="this view needs a terminal") as refused:
        live.run_live(Options(pids=(1,)))
    assert "bpftop record" in str(refused.value)


def test_the_crash_attribute_starts_empty() -> None:
    app, _ = demo_app()
    assert isinstance(app, BpftopApp) and app.crash is None


async def test_diagnostics_name_the_log_once_something_was_logged(log_file: Path) -> None:
    from .test_views import diag_text

    crash_log.log_exception("background job derive", ValueError("bug"))
    app, _ = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("5")
        text = diag_text(app)
    assert "Internal errors  1, last: background job derive: ValueError('bug')" in text
    assert f"(tracebacksin{log_file})" in "".join(text.split())  # wrapped at 120
