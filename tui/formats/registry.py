"""Every saved-profile format in one table: its name, file suffixes and codec.

A format is one module with a codec (:class:`Codec`: write a profile, read
one back) plus one line in :data:`FORMATS`. Everything that picks a format
goes through this table: ``--format``'s choices and the file name
(:func:`format_for`), ``record``'s rescue file, the live view's ``w``,
``view``/``diff`` (:func:`by_name` after sniffing the content). This module
is light (the CLI loads it at start): a codec's module is imported only when
its format is used (pprof's protobuf and the SVG's script added ~4 MiB to
``record``'s peak while it wrote folded text, which needs neither).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from bpftop.base.errors import BpftopError

if TYPE_CHECKING:
    from bpftop.tui.formats.saved import LoadedTree, ProfileMeta, SavedProfile
    from bpftop.tui.model.snapshot import CallNode

Fill = Callable[[IO[bytes]], object]
"""Writes a whole file to an open binary stream (each call afresh)."""


class ProfileFileError(BpftopError):
    """A saved profile that cannot be read, or an unknown format name."""

    exit_code = 2


class FormatError(ValueError):
    """A codec's refusal of content that is not its format (the reader names the
    file, and ``line`` when not 0); ``hint`` says what to do."""

    def __init__(
        self,
        message: str,
        hint: str = "give a file bpftop or speedscope/pprof wrote",
        line: int = 0,
    ) -> None:
        super().__init__(message)
        self.hint = hint
        self.line = line


class Codec(Protocol):
    """How one format writes a profile and reads one back."""

    def writer(self, saved: SavedProfile, build_ids: Mapping[str, str]) -> Fill:
        """What writes ``saved`` (``build_ids``: module path to build-id, for the
        formats that record them)."""
        ...

    def tree_writer(
        self, tree: CallNode, meta: ProfileMeta, events: CallNode | None
    ) -> Fill | None:
        """What writes a call tree straight from its arrays, or None when the format
        needs the whole :class:`SavedProfile` (the caller makes it)."""
        ...

    def read(self, payload: bytes | str) -> SavedProfile:
        """The profile in ``payload`` (text, or inflated bytes); :class:`FormatError`
        when it is not one."""
        ...

    def read_tree(self, payload: bytes | str) -> LoadedTree | None:
        """Just the call tree and metadata of ``payload`` (what ``view`` shows), read
        the fast way; None when the format has none (the caller builds the tree
        from :meth:`read`)."""
        ...


class WholeProfileCodec:
    """The shortcuts of a codec that has none: it writes and reads whole
    ``SavedProfile`` values only (speedscope, pprof, SVG)."""

    def tree_writer(self, tree: CallNode, meta: ProfileMeta, events: CallNode | None) -> None:
        return None

    def read_tree(self, payload: bytes | str) -> LoadedTree | None:
        return None


@dataclass(frozen=True, slots=True)
class FileFormat:
    """One format: its ``--format`` name, file suffixes (the first is written for
    a file bpftop names itself) and the module whose ``CODEC`` reads and writes it."""

    name: str
    suffixes: tuple[str, ...]
    module: str
    readable: bool = True
    """Whether ``view`` and ``diff`` read it back."""
    build_ids: bool = False
    """Whether its files name each mapping's build-id (worth reading them for)."""

    def codec(self) -> Codec:
        """The format's codec (its module is imported now, the first time)."""
        codec: Codec = importlib.import_module(self.module).CODEC
        return codec


FORMATS = (
    FileFormat("folded", (".folded", ".txt"), "bpftop.tui.formats.saved_folded"),
    FileFormat("speedscope", (".speedscope.json", ".json"), "bpftop.tui.formats.speedscope"),
    FileFormat("pprof", (".pb.gz", ".pprof"), "bpftop.tui.formats.pprof", build_ids=True),
    FileFormat("svg", (".svg",), "bpftop.tui.formats.svgflame", readable=False),
)
NAMES = tuple(fmt.name for fmt in FORMATS)
DEFAULT = FORMATS[0]
"""What a file name with no known suffix is written as."""
_BY_SUFFIX = sorted(
    ((suffix, fmt) for fmt in FORMATS for suffix in fmt.suffixes),
    key=lambda pair: -len(pair[0]),  # .speedscope.json before .json
)


def by_name(name: str) -> FileFormat:
    """The format called ``name``; :class:`ProfileFileError` if there is none."""
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise ProfileFileError(f"unknown format '{name}'", f"use one of {', '.join(NAMES)}")


def format_for(path: Path, name: str | None = None) -> FileFormat:
    """The output format: ``name`` if given, else by the file's suffix (default folded)."""
    if name is not None:
        return by_name(name)
    lower = path.name.lower()
    return next((fmt for suffix, fmt in _BY_SUFFIX if lower.endswith(suffix)), DEFAULT)
