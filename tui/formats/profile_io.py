"""Saved profiles on disk: choosing a format, writing safely, reading safely.

``write_saved`` writes through ``atomic.write_output`` (``saved_writer``
gives the same bytes to any open stream): a file is replaced atomically and
keeps its owner and mode, a device or FIFO is written in place, ``-`` is
standard output, and every failure raises ``OutputError`` saying why.
``read_saved`` (the stacks) and ``load_tree`` (just the call tree, fast for
big folded files) recognise the format by content (gzip magic: pprof; ``{``:
speedscope; else folded), refuse files larger than ``MAX_READ_BYTES`` up
front and turn every parse failure into ``ProfileFileError`` (one line for
the user).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from bpftop.tui.formats.atomic import write_output
from bpftop.tui.formats.folded_tree import folded_tree, parse_lines
from bpftop.tui.formats.kinds import ProfileFileError
from bpftop.tui.formats.pprof import PprofError, parse_pprof, to_pprof
from bpftop.tui.formats.pprof.reader import from_pprof
from bpftop.tui.formats.saved import ProfileMeta, SavedProfile
from bpftop.tui.formats.saved_folded import from_folded, saved_lines
from bpftop.tui.formats.saved_tree import build_tree
from bpftop.tui.formats.speedscope import SpeedscopeError, from_speedscope, to_speedscope
from bpftop.tui.formats.svgflame import to_svg
from bpftop.tui.model.snapshot import CallNode

MAX_READ_BYTES = 512 * 1024 * 1024
"""Larger files are refused (a 1 GB folded file would need ~10 GB of memory to load)."""


def write_saved(
    saved: SavedProfile,
    path: str | os.PathLike[str],
    fmt: str,
    build_ids: Mapping[str, str] | None = None,
) -> None:
    """Write ``saved`` in ``fmt`` to ``path`` (``-``: stdout); ``OutputError`` says why not."""
    write_output(path, saved_writer(saved, fmt, build_ids))


def saved_writer(
    saved: SavedProfile, fmt: str, build_ids: Mapping[str, str] | None = None
) -> Callable[[IO[bytes]], object]:
    """What writes ``saved`` in ``fmt`` to an open binary stream (encoded up front)."""
    if fmt == "pprof":
        data = to_pprof(saved, build_ids)
        return lambda out: out.write(data)
    if fmt == "speedscope":
        text = json.dumps(to_speedscope(saved), separators=(",", ":"))
        return lambda out: out.write(text.encode())
    if fmt == "svg":
        svg = to_svg(saved)
        return lambda out: out.write(svg.encode())
    return lambda out: out.writelines(f"{line}\n".encode() for line in saved_lines(saved))


@dataclass(frozen=True, slots=True)
class LoadedTree:
    """What the app needs of a saved profile: its metadata, call tree and skipped count."""

    meta: ProfileMeta
    tree: CallNode
    skipped: int


def read_saved(path: str | os.PathLike[str]) -> SavedProfile:
    """Read a profile bpftop (or another tool) saved as folded, speedscope or pprof."""
    source = Path(path)
    kind, payload = _classify(_read_bytes(source), source)
    if kind == "folded":
        assert isinstance(payload, str)
        return from_folded(payload)
    return _parse(kind, payload, source)


def load_tree(path: str | os.PathLike[str]) -> LoadedTree:
    """The call tree of a saved profile, the fast way (folded text never becomes stacks)."""
    source = Path(path)
    kind, payload = _classify(_read_bytes(source), source)
    if kind == "folded":
        assert isinstance(payload, str)
        found, skipped = parse_lines(payload)
        return LoadedTree(ProfileMeta(), folded_tree(found), skipped)
    saved = _parse(kind, payload, source)
    return LoadedTree(saved.meta, build_tree(saved), saved.skipped)


def _classify(data: bytes, source: Path) -> tuple[str, bytes | str]:
    """("pprof", protobuf bytes), ("speedscope", JSON text) or ("folded", text)."""
    if data[:2] == b"\x1f\x8b":
        return "pprof", _gunzip(data, source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProfileFileError(
            f"{source} is neither text nor gzip", "give a folded, speedscope or pprof file"
        ) from None
    start = text.lstrip()[:1]
    if start == "<":
        raise ProfileFileError(
            f"{source} looks like XML/SVG", "an SVG flame graph cannot be read back; "
            "use the folded, speedscope or pprof file",
        )  # fmt: skip
    return ("speedscope" if start == "{" else "folded"), text


def _parse(kind: str, payload: bytes | str, source: Path) -> SavedProfile:
    try:
        if isinstance(payload, bytes):
            return from_pprof(parse_pprof(payload))
        return from_speedscope(json.loads(payload))
    except json.JSONDecodeError as err:
        raise ProfileFileError(
            f"{source}: broken JSON at line {err.lineno} column {err.colno} ({err.msg})",
            "the file may be truncated; export it again",
        ) from None
    except (SpeedscopeError, PprofError) as err:
        raise ProfileFileError(
            f"{source}: {err}", "give a file bpftop or speedscope/pprof wrote"
        ) from None


def _read_bytes(source: Path) -> bytes:
    try:
        size = source.stat().st_size
        if size > MAX_READ_BYTES:
            raise ProfileFileError(
                f"{source} is {size / 2**20:,.0f} MiB, more than bpftop reads "
                f"({MAX_READ_BYTES // 2**20} MiB)",
                "cut it down first (e.g. keep the hottest lines of a folded file)",
            )
        return source.read_bytes()
    except OSError as err:
        raise ProfileFileError(
            f"cannot read {source}: {err.strerror or err}", "check the path"
        ) from None


def _gunzip(data: bytes, source: Path) -> bytes:
    """Decompress, refusing output beyond ``MAX_READ_BYTES`` (a gzip bomb) or a cut stream."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, MAX_READ_BYTES + 1)
    except zlib.error as err:
        raise ProfileFileError(f"{source}: broken gzip data ({err})", "export it again") from None
    if len(out) > MAX_READ_BYTES:
        raise ProfileFileError(
            f"{source} inflates to more than {MAX_READ_BYTES // 2**20} MiB", "cut it down first"
        )
    if not inflater.eof:
        raise ProfileFileError(f"{source}: the gzip data is truncated", "export it again")
    return out
