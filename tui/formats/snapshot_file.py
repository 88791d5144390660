"""A live session's snapshots in a file: what the screenshots are rendered from.

``write_session`` stores a session's last snapshot whole (its call tree, tables,
header facts, threads, map statistics, walker and Python counts) and the
collection figures of every tick before it (the header's rate and sparkline
are made from those); ``read_session`` gives them back as snapshots equal to
the ones written, call trees as plain nodes. JSON: each dataclass as an object
tagged with its class (only the snapshot's own classes are read back), tuples
as lists, a call tree as nested lists. No Textual here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from bpftop.bpf.python_walk import PythonCounts
from bpftop.bpf.raw import MapUsage
from bpftop.bpf.unwinder import UnwindState
from bpftop.tui.model.snapshot import (
    CallNode,
    CollectionStats,
    HotFunction,
    Overhead,
    Phase,
    ProcessInfo,
    Snapshot,
    ThreadShare,
    UnknownShare,
)

FORMAT = "bpftop live session 1"
CLASSES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        Snapshot, CollectionStats, ProcessInfo, HotFunction, UnknownShare, Overhead,
        ThreadShare, MapUsage, UnwindState, PythonCounts,
    )
}  # fmt: skip


class SessionFileError(ValueError):
    """The file is not a session written by ``write_session``."""


def write_session(path: Path, snapshots: list[Snapshot], meta: dict[str, str]) -> None:
    """The last of ``snapshots`` whole, the collection figures of the others."""
    if not snapshots:
        raise SessionFileError("no snapshot to write")
    data = {
        "format": FORMAT,
        "meta": meta,
        "ticks": [_encode(s.stats) for s in snapshots[:-1]],
        "last": _encode(snapshots[-1]),
    }
    path.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")


def read_session(path: Path) -> tuple[list[Snapshot], dict[str, str]]:
    """The session's snapshots, oldest first (each earlier one: the last with that
    tick's collection figures), and what the recording says of itself."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SessionFileError(f"{path} is not a bpftop live session file")
    last = _decode(data["last"])
    if not isinstance(last, Snapshot):
        raise SessionFileError(f"{path} holds no snapshot")
    earlier = []
    for seq, stats in enumerate(data["ticks"], start=1):
        decoded = _decode(stats)
        if not isinstance(decoded, CollectionStats):
            raise SessionFileError(f"{path}: tick {seq} holds no collection figures")
        earlier.append(dataclasses.replace(last, seq=seq, stats=decoded))
    return [*earlier, last], dict(data.get("meta", {}))


def _encode(value: Any) -> Any:
    if isinstance(value, CallNode):
        return {"tree": _node(value)}
    if isinstance(value, Phase):
        return {"phase": value.value}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"class": type(value).__name__, "fields": fields}
    if isinstance(value, tuple | list):
        return [_encode(v) for v in value]
    return value


def _node(node: CallNode) -> list[Any]:
    """[label, module, kernel, self, total, source, inlined, unresolved, children]."""
    fields = [node.label, node.module, node.kernel, node.self_count, node.total_count]
    fields += [node.source, node.inlined, node.unresolved]
    return [*fields, [_node(child) for child in node.children]]


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    if not isinstance(value, dict):
        return value
    if "tree" in value:
        return _tree(value["tree"])
    if "phase" in value:
        return Phase(value["phase"])
    cls = CLASSES.get(str(value.get("class")))
    if cls is None:
        raise SessionFileError(f"unknown class {value.get('class')!r} in the session file")
    return cls(**{name: _decode(v) for name, v in value["fields"].items()})


def _tree(fields: list[Any]) -> CallNode:
    label, module, kernel, own, total, source, inlined, unresolved, children = fields
    kids = tuple(_tree(child) for child in children)
    return CallNode(label, module, kernel, own, total, kids, source, inlined, unresolved)
