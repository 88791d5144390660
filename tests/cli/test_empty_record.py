"""The line a record with no samples prints: it names the case and its hint."""

from __future__ import annotations

from bpftop.tui.cli.empty_record import EmptyRun, empty_reason, seconds_since_launch

TARGET = "process 42 (worker)"


def run(probe: str = "profile:hz:99", **changes: object) -> str:
    fields: dict[str, object] = dict(
        probe=probe, targets=TARGET, exited=False, early=True, after_s=2.04, launched=False
    )
    fields.update(changes)
    return empty_reason(EmptyRun(**fields))  # type: ignore[arg-type]


def test_an_idle_target_is_told_apart_from_an_exited_one() -> None:
    idle = run()
    assert idle.startswith(f"no samples: no profile:hz:99 sample landed in {TARGET} within 2.0 s")
    assert "no CPU" in idle and "--probe offcpu" in idle
    gone = run(exited=True)
    assert f"{TARGET} exited within 2.0 s of bpftop's launch with no sample" in gone
    assert "bpftop record -- COMMAND" in gone and "offcpu" not in gone


def test_without_early_sampling_an_exit_may_precede_sampling() -> None:
    assert "before sampling started" in run(exited=True, early=False)
    assert "before sampling started" not in run(exited=True, early=True)


def test_a_command_bpftop_started_gets_no_hint_to_start_it_under_bpftop() -> None:
    line = run(exited=True, launched=True)
    assert "-- COMMAND" not in line and "no CPU" in line


def test_event_probes_say_the_probe_never_fired() -> None:
    line = run("uprobe:c:malloc")
    assert line.startswith(f"no samples: uprobe:c:malloc never fired in {TARGET}")
    assert "no CPU" not in line
    assert "uprobe:c:malloc never fired in it" in run("uprobe:c:malloc", exited=True)


def test_seconds_since_launch_counts_this_process_s_life() -> None:
    first = seconds_since_launch()
    assert 0 < first < 24 * 3600  # this test process started a while ago, not never
    assert seconds_since_launch() >= first
