"""Saved profiles on disk: choosing a format, writing safely, reading safely.

Every format is reached through the registry (``registry.FORMATS``: one codec
per format). ``write_saved`` writes through ``atomic.write_output``
(``saved_writer`` gives the same bytes to any open stream; ``tree_writer``
writes a call tree, streamed where the format can): a file is replaced atomically and
keeps its owner and mode, a device or FIFO is written in place, ``-`` is
standard output, and every failure raises ``OutputError`` saying why.
``read_saved`` (the stacks) and ``load_tree`` (just the call tree, fast for
big folded files) recognise the format by content (``sniff.classify``),
refuse more than ``MAX_READ_BYTES`` (a regular file up front, a device or
FIFO after reading one byte more), cut stacks deeper than ``MAX_FRAMES``
(counted), refuse a file with no samples, and turn every parse failure into
``ProfileFileError`` (one line for the user, naming the file).
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO

from bpftop.tui.formats.atomic import write_output
from bpftop.tui.formats.registry import FileFormat, Fill, FormatError, ProfileFileError, by_name
from bpftop.tui.formats.saved import (
    LoadedTree,
    ProfileMeta,
    SavedProfile,
    cap_depth,
    from_tree,
)
from bpftop.tui.formats.saved_folded import tree_lines, write_lines
from bpftop.tui.formats.saved_tree import build_tree
from bpftop.tui.formats.sniff import classify, drop_bad_lines, is_text_profile
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


def tree_folded_writer(tree: CallNode) -> Fill:
    """What writes ``tree`` as folded stacks to an open binary stream, each call
    afresh: the bytes of ``saved_writer(from_tree(tree, meta), "folded")``,
    streamed from the tree's arrays (``tree_lines``) without a ``SavedProfile``."""
    return lambda out: write_lines(out, tree_lines(tree))


def saved_writer(saved: SavedProfile, fmt: str, build_ids: Mapping[str, str] | None = None) -> Fill:
    """What writes ``saved`` in ``fmt`` to an open binary stream (encoded up front)."""
    return by_name(fmt).codec().writer(saved, build_ids or {})


def tree_writer(
    fmt: FileFormat,
    tree: CallNode,
    meta: ProfileMeta,
    events: CallNode | None,
    build_ids: Callable[[Iterable[str]], Mapping[str, str]],
) -> Fill:
    """What writes a call tree in ``fmt`` (each call afresh: ``record``'s rescue
    writes it again): streamed from its arrays where the format can (folded,
    ``record``'s default: made whole, the ``SavedProfile`` of the scale
    workload's ~38,600 stacks took ``record``'s peak from 290 MiB to 331;
    streamed, 296, bench.steady), else from the whole ``SavedProfile``, with the
    build-ids of its modules (``build_ids``) for a format that records them."""
    codec = fmt.codec()
    streamed = codec.tree_writer(tree, meta, events)
    if streamed is not None:
        return streamed
    saved = from_tree(tree, meta, events)
    modules = (frame.module for stack in saved.stacks for frame in stack.frames)
    return codec.writer(saved, build_ids(modules) if fmt.build_ids else {})


def read_saved(path: str | os.PathLike[str]) -> SavedProfile:
    """Read a profile bpftop (or another tool) saved as folded, speedscope or pprof."""
    source = Path(path)
    fmt, payload = _classified(source)
    saved = cap_depth(_read(fmt, payload, source))
    if saved.total <= 0:
        raise _no_samples(source, saved.skipped, payload)
    return saved


def load_tree(path: str | os.PathLike[str]) -> LoadedTree:
    """The call tree of a saved profile, the fast way where its format has one
    (folded text never becomes stacks)."""
    source = Path(path)
    fmt, payload = _classified(source)
    try:
        loaded = fmt.codec().read_tree(payload)
    except FormatError as err:
        raise _refused(source, err) from None
    if loaded is None:
        saved = cap_depth(_read(fmt, payload, source))
        events = sum(stack.events for stack in saved.stacks)
        loaded = LoadedTree(saved.meta, build_tree(saved), saved.skipped, saved.truncated, events)
    if loaded.tree.total_count <= 0:
        raise _no_samples(source, loaded.skipped, payload)
    return loaded


def _classified(source: Path) -> tuple[FileFormat, bytes | str]:
    """The file's format and content: gzip is inflated (pprof, or gzipped folded
    or speedscope text, read as the text would be: ``view``, ``diff`` and ``diff
    --folded`` read every file the same way)."""
    fmt, payload = classify(_read_bytes(source), source)
    if not isinstance(payload, bytes):
        return fmt, payload
    inflated = _gunzip(payload, source)
    del payload
    if is_text_profile(inflated):
        return classify(inflated, source)
    return fmt, inflated


def _read(fmt: FileFormat, payload: bytes | str, source: Path) -> SavedProfile:
    """The codec's profile of ``payload``, its counts checked against 64 bits."""
    try:
        saved = fmt.codec().read(payload)
    except FormatError as err:
        raise _refused(source, err) from None
    _check_range(saved, source)
    return saved


def _refused(source: Path, err: FormatError) -> ProfileFileError:
    where = f" line {err.line}" if err.line else ""
    return ProfileFileError(f"{source}{where}: {err}", err.hint)


def _no_samples(source: Path, skipped: int, payload: bytes | str) -> ProfileFileError:
    if isinstance(payload, str) and drop_bad_lines(payload)[1]:  # not one readable
        return ProfileFileError(  # line, and some were not even text
            f"{source} is neither text nor gzip", "give a folded, speedscope or pprof file"
        )
    why = f" ({skipped:,} unreadable lines/samples skipped)" if skipped else ""
    return ProfileFileError(
        f"no samples in {source}{why}", "give a folded, speedscope or pprof file with samples"
    )


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
