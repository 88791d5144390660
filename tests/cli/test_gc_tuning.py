"""The cyclic GC is off while bpftop starts and back on from tune_gc, or when main returns."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from bpftop.tui.cli.gc_tuning import GC_THRESHOLDS, gc_paused, tune_gc
from bpftop.tui.cli.main import main


@pytest.fixture
def restored_gc() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    gc.enable()


def test_collection_is_paused_until_tune_gc(restored_gc: None) -> None:
    with gc_paused():
        assert not gc.isenabled()
        tune_gc()
        assert gc.isenabled() and gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.isenabled()


def test_collection_is_back_when_main_ends_before_tune_gc(restored_gc: None) -> None:
    assert main(["-p", "0"]) == 2  # refused at the arguments: no tune_gc
    assert gc.isenabled()
