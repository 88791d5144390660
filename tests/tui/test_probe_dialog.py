"""The probe dialog against a fake source and fake symbol/tracepoint lists:
validation as you type, completion, Enter switches, Esc keeps the probe;
the header shows every probe used and time for weighted probes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from textual.widgets import Input, OptionList, Static

from bpftop.tui.app.app import BpftopApp
from bpftop.tui.app.probe_dialog import ProbeDialog
from bpftop.tui.collect.probe_complete import ProbeCompleter
from tests.tui.fake_source import FakeSource

from .helpers import BASE, header, snapshot_of

SIZE = (120, 36)
FILES = {99: ["/usr/bin/small", "/usr/lib/x86_64-linux-gnu/libc.so.6"]}
SYMBOLS = {
    "/usr/bin/small": [("main", 0x10), ("leaf_a", 0x20), ("leaf_b", 0x30)],
    "/usr/lib/x86_64-linux-gnu/libc.so.6": [
        ("malloc", 0x100),
        ("__libc_malloc", 0x100),  # aliases of malloc, as glibc's symbol tables have them
        ("__GI___libc_malloc", 0x100),
        ("malloc", 0x100),  # .symtab and .dynsym both: listed twice
        ("malloc_trim", 0x200),
        ("__malloc_trim", 0x200),
        ("mallopt", 0x300),
        ("mallopt", 0x300),
        ("__malloc_hook_internal", 0x400),  # no public name: it is offered
    ],
}
ASKED: list[tuple[str, int]] = []


def fake_symbols(path: str, pid: int) -> list[tuple[str, int]]:
    ASKED.append((path, pid))
    return SYMBOLS.get(path, [])


TRACEPOINTS = ["sched:sched_switch", "sched:sched_wakeup", "syscalls:sys_enter_write"]


def fake_check(text: str, pids: Sequence[int]) -> str:
    """Stands in for the kernel check: only known names attach."""
    known = {f"uprobe:small:{n}" for n, _ in SYMBOLS["/usr/bin/small"]}
    known |= {f"tracepoint:{t}" for t in TRACEPOINTS} | {"offcpu", "profile:hz:99"}
    return "" if text in known else f"no such probe here: {text}"


def fake_completer() -> ProbeCompleter:
    return ProbeCompleter(
        pids=[99],
        tracepoints=lambda: TRACEPOINTS,
        files=lambda pid: FILES.get(pid, []),
        symbols=fake_symbols,
        checker=fake_check,
    )


def make_app() -> tuple[BpftopApp, FakeSource]:
    completer = fake_completer()
    snap = dataclasses.replace(snapshot_of(BASE), probes=("profile:hz:99", "uprobe:small:leaf_a"))
    source = FakeSource([snap])
    return BpftopApp(source, 1.0, completer=completer), source


def dialog(app: BpftopApp) -> ProbeDialog:
    assert isinstance(app.screen, ProbeDialog)
    return app.screen


def choices(app: BpftopApp) -> list[str]:
    options = app.screen.query_one("#choices", OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


def verdict(app: BpftopApp) -> str:
    return str(app.screen.query_one("#verdict", Static).render())


async def test_typing_validates_completes_and_enter_switches() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        assert dialog(app).used == ("uprobe:small:leaf_a",), "not the running probe"
        assert choices(app) == ["uprobe:small:leaf_a"], "used probes first"
        await pilot.press(*"upr")
        assert choices(app) == ["uprobe:"]
        await pilot.press("tab", *"sm")
        await pilot.pause()
        assert app.screen.query_one("#spec", Input).value == "uprobe:sm"
        assert choices(app) == ["uprobe:small:"]
        await pilot.press("tab", *"lea")
        await pilot.pause()
        assert choices(app) == ["uprobe:small:leaf_a", "uprobe:small:leaf_b"]
        assert "✗" in verdict(app)
        await pilot.press("enter")  # not valid: the dialog stays
        await pilot.pause()
        assert isinstance(app.screen, ProbeDialog) and source.probe_switches == []
        await pilot.press("f", "_", "b")
        await pilot.pause()
        assert "✓ uprobe:small:leaf_b" in verdict(app)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeDialog)
    assert source.probe_switches == ["uprobe:small:leaf_b"]


async def test_tracepoint_completion_and_escape_keeps_the_probe() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p", *"tracepoint:sched:")
        await pilot.pause()
        assert choices(app) == ["tracepoint:sched:sched_switch", "tracepoint:sched:sched_wakeup"]
        await pilot.press("down", "enter")  # pick from the list into the field
        await pilot.pause()
        assert dialog(app).query_one("#spec", Input).value.startswith("tracepoint:sched:sched_")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeDialog)
    assert source.probe_switches == []


async def test_header_lists_probes_and_says_time_for_weighted_ones() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "uprobe:small:leaf_a" in header(app)
        base = snapshot_of(BASE, seq=2)
        weighted = dataclasses.replace(
            base,
            stats=dataclasses.replace(base.stats, probe="offcpu"),
            probes=("profile:hz:99", "offcpu"),
            weight_unit="ns",
            probe_events=42,
            probe_message="probe not changed: no function 'x' in /bin/small",
        )
        source.push(weighted)
        await pilot.pause()
        text = header(app)
        assert "offcpu (time, ns)" in text and "in 42 events" in text
        assert "samples" not in text.split("\n")[1]
        assert "probe not changed: no function 'x'" in text


def test_completer_offers_kinds_events_and_libraries() -> None:
    completer = fake_completer()
    assert completer.complete("u") == ("uprobe:", "uretprobe:", "usdt:")
    assert completer.complete("software:page") == ("software:page-faults",)
    assert "uretprobe:libc.so.6:" in completer.complete("uretprobe:lib")
    assert completer.complete("uprobe:libc.so.6:mallo") == (
        "uprobe:libc.so.6:malloc",
        "uprobe:libc.so.6:malloc_trim",
        "uprobe:libc.so.6:mallopt",
    )
    assert completer.check("offcpu") == ""
    assert completer.check("uprobe:small:nope").startswith("no such probe")


async def test_brackets_in_a_spec_or_a_verdict_are_text_not_markup() -> None:
    """Symbol names hold brackets (``operator[]``, ``<[T]>``): shown as typed,
    and a stray closing tag does not end the app."""
    app, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        await pilot.press(*"uprobe:c:[/x]")
        await pilot.pause()
        assert "✗ no such probe here: uprobe:c:[/x]" in verdict(app)
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_code in (None, 0)


def test_uprobe_symbols_complete_from_the_file_a_short_name_gives_each_once() -> None:
    completer = fake_completer()
    ASKED.clear()
    assert completer.complete("uretprobe:c:mal") == (
        "uretprobe:c:malloc",
        "uretprobe:c:malloc_trim",
        "uretprobe:c:mallopt",
    ), "unique names, no internal aliases"
    assert ASKED == [("/usr/lib/x86_64-linux-gnu/libc.so.6", 99)], "the target's own file"
    assert completer.complete("uprobe:c:__") == (
        "uprobe:c:__GI___libc_malloc",
        "uprobe:c:__libc_malloc",
        "uprobe:c:__malloc_hook_internal",
        "uprobe:c:__malloc_trim",
    ), "typing an underscore asks for the aliases"
    assert completer.complete("uprobe:c:__malloc_h") == ("uprobe:c:__malloc_hook_internal",)


async def test_tab_completes_a_uprobe_symbol_in_a_library_named_short() -> None:
    app, source = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p", *"uprobe:c:mall")
        await pilot.pause()
        assert choices(app) == ["uprobe:c:malloc", "uprobe:c:malloc_trim", "uprobe:c:mallopt"]
        await pilot.press("tab")
        await pilot.pause()
        assert app.screen.query_one("#spec", Input).value == "uprobe:c:malloc"
        await pilot.press("escape")
    assert source.probe_switches == []


def used_app() -> tuple[BpftopApp, FakeSource]:
    """A session that used three probes; profile:hz:99 is running."""
    completer = fake_completer()
    probes = ("profile:hz:99", "uprobe:small:leaf_a", "offcpu", "tracepoint:sched:sched_switch")
    source = FakeSource([dataclasses.replace(snapshot_of(BASE), probes=probes)])
    return BpftopApp(source, 1.0, completer=completer), source


async def test_up_brings_back_the_latest_probe_and_enter_switches() -> None:
    app, source = used_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        assert choices(app) == [
            "tracepoint:sched:sched_switch",
            "offcpu",
            "uprobe:small:leaf_a",
        ], "the latest first, not the running one"
        await pilot.press("up")
        assert app.screen.query_one("#spec", Input).value == "tracepoint:sched:sched_switch"
        await pilot.press("up")
        assert app.screen.query_one("#spec", Input).value == "offcpu"
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeDialog)
        assert source.probe_switches == ["offcpu"]
        await pilot.press("p")
        await pilot.pause()
        assert choices(app)[0] == "offcpu", "the one just chosen is the latest"


async def test_up_does_not_replace_typed_text_and_a_listed_probe_switches_at_once() -> None:
    app, source = used_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p", "o", "f", "up")
        assert app.screen.query_one("#spec", Input).value == "of"
        await pilot.press("backspace", "backspace", "down", "down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeDialog), "a probe used before: no second Enter"
        assert source.probe_switches == ["offcpu"]
