"""ProcessTables: lookups that never build, tables shared by file across
processes, maps re-read (rate-limited) when a pc is outside every mapping."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpftop.symbols.elf.code_ranges import CodeRange, code_ranges
from bpftop.symbols.unwind import process_tables
from bpftop.symbols.unwind.cache import UnwindCache
from bpftop.symbols.unwind.process_tables import ProcessTables


@pytest.fixture
def two_chains(workloads: Path) -> Iterator[tuple[int, int]]:
    procs = [subprocess.Popen([str(workloads / "chain_nofp")]) for _ in range(2)]
    time.sleep(0.2)
    yield procs[0].pid, procs[1].pid
    for proc in procs:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def unwind_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One table cache for the module: libc is built once, not per test."""
    return tmp_path_factory.mktemp("unwind")


def _exe_range(pid: int) -> CodeRange:
    return code_ranges(pid)[0]  # the main program comes first


def test_lookup_is_none_until_built_then_gives_table_and_bias(
    two_chains: tuple[int, int], unwind_dir: Path
) -> None:
    pid, _ = two_chains
    tables = ProcessTables(UnwindCache(str(unwind_dir)))
    lookup = tables.lookup_for(pid)
    exe = _exe_range(pid)
    assert lookup(exe.start) is None
    assert exe in tables.missing(pid)
    files = {c.key for c in tables.missing(pid)}
    assert tables.build_missing(pid) == len(files) > 1
    found = lookup(exe.start)
    assert found is not None
    table, bias = found
    assert bias == exe.bias and table is tables.table(exe.key)
    assert len(table) > 0 and not tables.missing(pid)


def test_tables_are_shared_by_file_across_processes(
    two_chains: tuple[int, int], unwind_dir: Path
) -> None:
    first, second = two_chains
    cache = UnwindCache(str(unwind_dir))
    tables = ProcessTables(cache)
    tables.build_missing(first)
    builds = cache.builds
    assert not tables.missing(second)  # same executable, same libc
    assert tables.build_missing(second) == 0 and cache.builds == builds
    exe = _exe_range(second)
    found = tables.lookup_for(second)(exe.start)
    assert found is not None and found[0] is tables.table(exe.key)


def test_maps_are_reread_on_a_miss_at_most_once_per_interval(
    two_chains: tuple[int, int], unwind_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid, _ = two_chains
    reads: list[int] = []

    def counting(pid: int, proc_root: str = "/proc") -> tuple[CodeRange, ...]:
        reads.append(pid)
        return code_ranges(pid, proc_root)

    monkeypatch.setattr(process_tables, "all_code_ranges", counting)
    now = [100.0]
    tables = ProcessTables(UnwindCache(str(unwind_dir)), clock=lambda: now[0], min_reread_s=1.0)
    lookup = tables.lookup_for(pid)
    assert reads == [pid]
    exe = _exe_range(pid)
    assert lookup(exe.start) is None and reads == [pid]  # mapped: no re-read
    assert lookup(0x1000) is None and reads == [pid]  # too soon after the first read
    now[0] += 1.5
    assert lookup(0x1000) is None and reads == [pid, pid]
    assert lookup(0x2000) is None and reads == [pid, pid]


def test_a_gone_process_gives_no_lookups(unwind_dir: Path) -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    tables = ProcessTables(UnwindCache(str(unwind_dir)))
    assert tables.lookup_for(proc.pid)(0x401000) is None
    assert tables.missing(proc.pid) == () and tables.build_missing(proc.pid) == 0
    tables.forget(proc.pid)
