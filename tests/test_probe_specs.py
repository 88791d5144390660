"""Probe spec parsing: every kind, aliases, defaults, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpftop.base.errors import UsageError
from bpftop.bpf.probes import (
    KINDS,
    Attach,
    ProbeKind,
    ProbeSpec,
    ProbeSpecError,
    ProgramType,
    parse_spec,
)


@pytest.mark.parametrize(
    ("text", "spec", "canonical"),
    [
        ("profile:hz:99", ProbeSpec(ProbeKind.PROFILE, number=99), "profile:hz:99"),
        ("profile:997", ProbeSpec(ProbeKind.PROFILE, number=997), "profile:hz:997"),
        (
            "software:page-faults:10",
            ProbeSpec(ProbeKind.SOFTWARE, name="page-faults", number=10),
            None,
        ),
        ("s:cs", ProbeSpec(ProbeKind.SOFTWARE, name="cs", number=1), "software:cs:1"),
        (
            "software:cpu-clock",
            ProbeSpec(ProbeKind.SOFTWARE, name="cpu-clock", number=1_000_000),
            "software:cpu-clock:1000000",
        ),
        (
            "hardware:cycles",
            ProbeSpec(ProbeKind.HARDWARE, name="cycles", number=1_000_000),
            "hardware:cycles:1000000",
        ),
        ("uprobe:c:malloc", ProbeSpec(ProbeKind.UPROBE, target="c", name="malloc"), None),
        (
            "ur:/bin/x:ns::f",
            ProbeSpec(ProbeKind.URETPROBE, target="/bin/x", name="ns::f"),
            "uretprobe:/bin/x:ns::f",
        ),
        (
            "tracepoint:sched:sched_switch",
            ProbeSpec(ProbeKind.TRACEPOINT, "sched", "sched_switch"),
            None,
        ),
        ("kprobe:vfs_read", ProbeSpec(ProbeKind.KPROBE, name="vfs_read"), None),
        ("kretprobe:vfs_read", ProbeSpec(ProbeKind.KRETPROBE, name="vfs_read"), None),
        ("offcpu", ProbeSpec(ProbeKind.OFFCPU), "offcpu"),
        ("offcpu:100", ProbeSpec(ProbeKind.OFFCPU, number=100), "offcpu:100"),
        (
            "usdt:/bin/py:python:gc__start",
            ProbeSpec(ProbeKind.USDT, "/bin/py", "gc__start", "python"),
            None,
        ),
    ],
)
def test_specs_parse_and_print_back(text: str, spec: ProbeSpec, canonical: str | None) -> None:
    parsed = parse_spec(text)
    assert parsed == spec
    assert str(parsed) == (canonical or text)
    assert parse_spec(str(parsed)) == parsed


def test_weighted_kinds_and_globs() -> None:
    assert parse_spec("uretprobe:c:malloc").weighted
    assert parse_spec("offcpu").weighted
    assert not parse_spec("uprobe:c:malloc").weighted
    assert parse_spec("uprobe:python3.11:PyObject_Gen*").is_glob
    assert not parse_spec("uprobe:c:malloc").is_glob


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty probe spec"),
        ("bogus:x", "unknown probe kind 'bogus'"),
        ("profile:hz:fast", "'fast' in 'profile:hz:fast' is not a number"),
        ("profile:hz:0", "out of range"),
        ("profile:khz:9", "bad profile spec"),
        ("software:nope", "bad software spec"),
        ("hardware:cycles:x", "not a number"),
        ("uprobe:malloc", "bad uprobe spec"),
        ("uprobe::malloc", "bad uprobe spec"),
        ("tracepoint:sched", "bad tracepoint spec"),
        ("kprobe:", "bad kprobe spec"),
        ("offcpu:1:2", "bad offcpu spec"),
        ("usdt:a:b", "bad usdt spec"),
    ],
)
def test_bad_specs_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ProbeSpecError, match=message) as err:
        parse_spec(text)
    assert isinstance(err.value, UsageError) and err.value.exit_code == 2
    assert err.value.hint and "\n" not in str(err.value)


def test_every_kind_has_one_rule_that_holds_together() -> None:
    """One descriptor per kind (bpf/probes.py's KINDS): each handler it names is
    a function of the BPF program, the two time probes are the only weighted
    kinds, and perf-event kinds carry their perf_event_open type."""
    program = (Path(__file__).resolve().parents[1] / "bpf" / "bpftop.bpf.c").read_text()
    assert set(KINDS) == set(ProbeKind)
    for kind, rule in KINDS.items():
        if rule.one_copy:  # BCC's name for TRACEPOINT_PROBE(category, name)
            category, name = rule.tracepoint.split(":")
            assert rule.handler.decode() == f"tracepoint__{category}__{name}"
            assert f"TRACEPOINT_PROBE({category}, {name})" in program
            continue
        for handler in filter(None, (rule.handler, rule.return_handler)):
            assert f"int {handler.decode()}(" in program, (kind, handler)
        perf = rule.attach is Attach.PERF_EVENT
        assert perf == (rule.program is ProgramType.PERF_EVENT) == (rule.perf_type >= 0), kind
    weighted = {kind for kind in ProbeKind if ProbeSpec(kind).weighted}
    assert weighted == {ProbeKind.URETPROBE, ProbeKind.OFFCPU}
