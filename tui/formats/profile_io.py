"""Saved profiles on disk: choosing a format, writing safely, reading safely.

``write_saved`` writes through ``atomic.write_output`` (``saved_writer``
gives the same bytes to any open stream): a file is replaced atomically and
keeps its owner and mode, a device or FIFO is written in place, ``-`` is
standard output, and every failure raises ``OutputError`` saying why.
``read_saved`` (the stacks) and ``load_tree`` (just the call tree, fast for
big folded files) recognise the format by content (``sniff.classify``),
refuse more than ``MAX_READ_BYTES`` (a regular file up front, a device or
FIFO after reading one byte more), cut stacks deeper than ``MAX_FRAMES``
(counted), refuse a file with no samples, and turn every parse failure into
``ProfileFileError`` (one line for the user, naming the file).
The pprof and SVG modules are imported where they are used: importing them
(protobuf, the SVG's script) added ~4 MiB to ``record``'s peak while it
wrote folded text, which needs neither.
"""

from __future__ import annotations

import json
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from bpftop.tui.formats.atomic import write_output
from bpftop.tui.formats.folded_tree import CountOverflow, folded_tree, parse_lines
from bpftop.tui.formats.folded_tree import cap_depth as cap_depth_lines
from bpftop.tui.formats.registry import ProfileFileError
from bpftop.tui.formats.saved import ProfileMeta, SavedProfile, cap_depth
from bpftop.tui.formats.saved_folded import from_folded, saved_lines, tree_lines
from bpftop.tui.formats.saved_tree import build_tree
from bpftop.tui.formats.sniff import classify, drop_bad_lines, is_text_profile
from bpftop.tui.formats.speedscope import SpeedscopeError, from_speedscope, to_speedscope
from bpftop.tui.model.snapshot import CallNode

INT64_MAX = 2**63 - 1
"""The largest count or sum of counts a profile may hold (the views count in int64)."""

MAX_READ_BYTES = 512 * 1024 * 1024
"""Larger files are refused (a 1 GB folded file would need ~10 GB of memory to load);
so is gzip data that inflates to more."""

GUNZIP_STEP = 16 * 1024 * 1024
"""How much inflated data one step of ``_gunzip`` makes at most."""


def write_saved(
    saved: SavedProfile,
    path: str | os.PathLike[str],
    fmt: str,
    build_ids: Mapping[str, str] | None = None,
) -> None:
    """Write ``saved`` in ``fmt`` to ``path`` (``-``: stdout); ``OutputError`` says why not."""
    write_output(path, saved_writer(saved, fmt, build_ids))


def write_folded(tree: CallNode, path: str | os.PathLike[str]) -> int:
    """Write ``tree`` as folded stacks (the live view's ``w``); the line count."""
    written = 0

    def fill(out: IO[bytes]) -> None:
        nonlocal written
        written = write_lines(out, tree_lines(tree))

    write_output(path, fill)
    return written


def tree_folded_writer(tree: CallNode) -> Callable[[IO[bytes]], object]:
    """What writes ``tree`` as folded stacks to an open binary stream, each call
    afresh: the bytes of ``saved_writer(from_tree(tree, meta), "folded")``,
    streamed from the tree's arrays (``tree_lines``) without a ``SavedProfile``."""
    return lambda out: write_lines(out, tree_lines(tree))


def write_lines(out: IO[bytes], lines: Iterable[str]) -> int:
    """Write each line and a newline; how many lines."""
    count = 0
    for line in lines:
        out.write(f"{line}\n".encode())
        count += 1
    return count


def saved_writer(
    saved: SavedProfile, fmt: str, build_ids: Mapping[str, str] | None = None
) -> Callable[[IO[bytes]], object]:
    """What writes ``saved`` in ``fmt`` to an open binary stream (encoded up front)."""
    if fmt == "pprof":
        from bpftop.tui.formats.pprof import to_pprof  # when used (module docstring)

        data = to_pprof(saved, build_ids)
        return lambda out: out.write(data)
    if fmt == "speedscope":
        text = json.dumps(to_speedscope(saved), separators=(",", ":"))
        return lambda out: out.write(text.encode())
    if fmt == "svg":
        from bpftop.tui.formats.svgflame import to_svg  # when used (module docstring)

        svg = to_svg(saved)
        return lambda out: out.write(svg.encode())
    return lambda out: write_lines(out, saved_lines(saved))


@dataclass(frozen=True, slots=True)
class LoadedTree:
    """What the app needs of a saved profile: its metadata, call tree, what was
    skipped (unreadable lines or samples) and how many stacks were cut at ``MAX_FRAMES``."""

    meta: ProfileMeta
    tree: CallNode
    skipped: int
    truncated: int = 0
    events: int = 0
    """A time probe's events (calls, blocks) per stack, summed (0: none in the file)."""


def read_saved(path: str | os.PathLike[str]) -> SavedProfile:
    """Read a profile bpftop (or another tool) saved as folded, speedscope or pprof."""
    source = Path(path)
    kind, payload = _classified(source)
    if kind == "folded":
        assert isinstance(payload, str)
        text, bad = drop_bad_lines(payload)
        try:
            saved = from_folded(text)
        except CountOverflow as err:
            raise _overflow(source, text, err) from None
        saved = replace(saved, skipped=saved.skipped + bad)
    else:
        saved, bad = cap_depth(_parse(kind, payload, source)), 0
    if saved.total <= 0:
        raise _no_samples(source, saved.skipped, bad)
    return saved


def load_tree(path: str | os.PathLike[str]) -> LoadedTree:
    """The call tree of a saved profile, the fast way (folded text never becomes stacks)."""
    source = Path(path)
    kind, payload = _classified(source)
    if kind == "folded":
        assert isinstance(payload, str)
        text, bad = drop_bad_lines(payload)
        found, skipped = parse_lines(text)
        found, cut = cap_depth_lines(found)
        try:
            loaded = LoadedTree(ProfileMeta(), folded_tree(found), skipped + bad, cut)
        except CountOverflow as err:
            raise _overflow(source, text, err) from None
    else:
        saved, bad = cap_depth(_parse(kind, payload, source)), 0
        events = sum(stack.events for stack in saved.stacks)
        loaded = LoadedTree(saved.meta, build_tree(saved), saved.skipped, saved.truncated, events)
    if loaded.tree.total_count <= 0:
        raise _no_samples(source, loaded.skipped, bad)
    return loaded


def _classified(source: Path) -> tuple[str, bytes | str]:
    """The file's format and content: gzip is inflated (pprof, or gzipped folded
    or speedscope text, read as the text would be: ``view``, ``diff`` and ``diff
    --folded`` read every file the same way)."""
    kind, payload = classify(_read_bytes(source), source)
    if kind != "pprof":
        return kind, payload
    assert isinstance(payload, bytes)
    inflated = _gunzip(payload, source)
    del payload
    if is_text_profile(inflated):
        return classify(inflated, source)
    return "pprof", inflated


def _no_samples(source: Path, skipped: int, bad: int) -> ProfileFileError:
    if bad:  # not one readable line, and some were not even text
        return ProfileFileError(
            f"{source} is neither text nor gzip", "give a folded, speedscope or pprof file"
        )
    why = f" ({skipped:,} unreadable lines/samples skipped)" if skipped else ""
    return ProfileFileError(
        f"no samples in {source}{why}", "give a folded, speedscope or pprof file with samples"
    )


def _overflow(source: Path, text: str, err: CountOverflow) -> ProfileFileError:
    """The error naming the file and the first line whose count is ``err.count``."""
    found = re.search(rf"[ \t]{err.count}[ \t]*\r?$", text, re.MULTILINE)
    line = text.count("\n", 0, found.start()) + 1 if found else 0
    where = f" line {line}" if line else ""
    return ProfileFileError(
        f"{source}{where}: count {err.count} does not fit in 64 bits",
        "is this a folded stack file?",
    )


def _parse(kind: str, payload: bytes | str, source: Path) -> SavedProfile:
    from bpftop.tui.formats.pprof import PprofError, parse_pprof  # when used (module docstring)
    from bpftop.tui.formats.pprof.reader import from_pprof

    try:
        if isinstance(payload, bytes):
            saved = from_pprof(parse_pprof(payload))
        else:
            saved = from_speedscope(json.loads(payload))
    except json.JSONDecodeError as err:
        raise ProfileFileError(
            f"{source}: broken JSON at line {err.lineno} column {err.colno} ({err.msg})",
            "the file may be truncated; export it again",
        ) from None
    except (SpeedscopeError, PprofError) as err:
        raise ProfileFileError(
            f"{source}: {err}", "give a file bpftop or speedscope/pprof wrote"
        ) from None
    _check_range(saved, source)
    return saved


def _check_range(saved: SavedProfile, source: Path) -> None:
    """Counts and events per stack, and their sums, fit in 64 bits (the views count
    in int64: two pprof values of 2**63-1 read as no samples in one view and as
    18446744073709551614 in another; speedscope weights of 1e308, as an error)."""
    for what, values in (
        ("count", [stack.count for stack in saved.stacks]),
        ("event", [stack.events for stack in saved.stacks]),
    ):
        biggest = max(values, default=0)
        total = sum(values)
        if biggest > INT64_MAX or total > INT64_MAX:
            shown = f"{biggest:.3g}" if biggest > INT64_MAX else f"{total:.3g} in all"
            raise ProfileFileError(
                f"{source}: a {what} of {shown} is out of range (at most {INT64_MAX}, 64 bits)",
                "is this file damaged? export it again",
            )


def _read_bytes(source: Path) -> bytes:
    """The file's bytes; more than ``MAX_READ_BYTES`` is refused, for a regular file up
    front, for anything else (a device, FIFO, /dev/zero) after reading one byte more."""
    try:
        with open(source, "rb") as stream:
            info = os.fstat(stream.fileno())
            size = info.st_size
            if stat.S_ISREG(info.st_mode) and size > MAX_READ_BYTES:
                raise _too_big(f"{source} is {size / 2**20:,.0f} MiB, more than")
            data = stream.read(MAX_READ_BYTES + 1)
    except OSError as err:
        raise ProfileFileError(
            f"cannot read {source}: {err.strerror or err}", "check the path"
        ) from None
    if len(data) > MAX_READ_BYTES:
        raise _too_big(f"{source} (not a regular file) gives more than")
    return data


def _too_big(what: str) -> ProfileFileError:
    return ProfileFileError(
        f"{what} bpftop reads ({MAX_READ_BYTES // 2**20} MiB)",
        "cut it down first (e.g. keep the hottest lines of a folded file)",
    )


def _gunzip(data: bytes, source: Path) -> bytes:
    """Decompress, refusing output beyond ``MAX_READ_BYTES`` (a gzip bomb) or a cut
    stream. Inflated a piece at a time, so a bomb is refused holding at most the
    limit (at once, zlib's pieces and their joined copy held twice it: 1.09 GB
    for a 600 MB bomb)."""
    inflater = zlib.decompressobj(wbits=31)
    out = bytearray()
    pending = data
    try:
        while pending and not inflater.eof:
            out += inflater.decompress(pending, GUNZIP_STEP)
            pending = inflater.unconsumed_tail
            if len(out) > MAX_READ_BYTES:
                raise ProfileFileError(
                    f"{source} inflates to more than {MAX_READ_BYTES // 2**20} MiB",
                    "cut it down first",
                )
    except zlib.error as err:
        raise ProfileFileError(f"{source}: broken gzip data ({err})", "export it again") from None
    if not inflater.eof:
        raise ProfileFileError(f"{source}: the gzip data is truncated", "export it again")
    return bytes(out)
