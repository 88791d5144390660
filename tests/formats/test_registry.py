"""The format registry: one table every format choice goes through."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from bpftop.tui.cli.args import build_parsers
from bpftop.tui.formats.registry import (
    FORMATS,
    NAMES,
    FileFormat,
    FormatError,
    ProfileFileError,
    by_name,
    format_for,
)
from bpftop.tui.formats.saved import from_tree
from tests.formats.test_saved import META, sample_profile


def test_every_suffix_names_its_own_format() -> None:
    for fmt in FORMATS:
        for suffix in fmt.suffixes:
            assert format_for(Path(f"out{suffix.upper()}")) is fmt, suffix
    assert format_for(Path("out.data")).name == "folded", "unknown suffixes write folded text"
    assert format_for(Path("x.folded"), "svg") is by_name("svg"), "--format wins"
    with pytest.raises(ProfileFileError, match="unknown format 'png'"):
        by_name("png")


def test_record_offers_exactly_the_registered_formats() -> None:
    _, record = build_parsers()
    (action,) = [a for a in record._actions if a.dest == "format"]
    assert tuple(action.choices or ()) == NAMES


@pytest.mark.parametrize("fmt", FORMATS, ids=NAMES)
def test_each_codec_writes_and_the_readable_ones_read_back(fmt: FileFormat) -> None:
    saved = from_tree(sample_profile().tree(), META)
    out = io.BytesIO()
    fmt.codec().writer(saved, {})(out)
    data = out.getvalue()
    assert data
    if not fmt.readable:
        with pytest.raises(FormatError):
            fmt.codec().read(data)
        return
    payload = gzip.decompress(data) if fmt.name == "pprof" else data.decode()
    back = fmt.codec().read(payload)
    assert back.total == saved.total and len(back.stacks) == len(saved.stacks)
