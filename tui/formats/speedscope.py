"""speedscope's JSON file format to and from a ``SavedProfile``.

One ``sampled`` profile per stack group (process or thread), named
``GROUP`` with weights in samples (unit ``none``); every frame once in
``shared.frames`` with ``file``/``line`` where DWARF knew them. The schema
allows extra members, so frames also carry ``module``/``kernel``/``inlined``/
``unresolved`` and the file a ``bpftop`` object with the metadata; other
tools ignore them, bpftop reads them back. No I/O here.
"""

from __future__ import annotations

import math
from typing import Any

from bpftop.tui.formats.saved import ProfileMeta, SavedFrame, SavedProfile, SavedStack

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"


class SpeedscopeError(ValueError):
    """The JSON is not a speedscope file bpftop can read."""


def _frame_json(frame: SavedFrame) -> dict[str, Any]:
    out: dict[str, Any] = {"name": frame.name}
    if frame.file:
        out["file"] = frame.file
    if frame.line:
        out["line"] = frame.line
    if frame.module:
        out["module"] = frame.module
    for flag in ("kernel", "inlined", "unresolved"):
        if getattr(frame, flag):
            out[flag] = True
    return out


def to_speedscope(saved: SavedProfile, name: str = "bpftop profile") -> dict[str, Any]:
    """The speedscope document (a JSON-ready dict)."""
    index: dict[SavedFrame, int] = {}
    by_group: dict[str, tuple[list[list[int]], list[int]]] = {}
    for stack in saved.stacks:
        samples, weights = by_group.setdefault(stack.thread, ([], []))
        samples.append([index.setdefault(frame, len(index)) for frame in stack.frames])
        weights.append(stack.count)
    profiles = []
    for group, (samples, weights) in by_group.items():
        total = sum(weights)
        profiles.append({
            "type": "sampled", "name": group, "unit": "none",
            "startValue": 0, "endValue": total, "samples": samples, "weights": weights,
        })  # fmt: skip
    meta = dict(saved.meta.items())
    return {
        "$schema": SCHEMA_URL,
        "name": name,
        "exporter": f"bpftop {saved.meta.version}".strip(),
        "activeProfileIndex": 0,
        "shared": {"frames": [_frame_json(frame) for frame in index]},
        "profiles": profiles,
        "bpftop": meta,
    }


def _frame_from(item: object) -> SavedFrame:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise SpeedscopeError("a frame without a name")
    line = item.get("line", 0)
    return SavedFrame(
        item["name"],
        str(item.get("module", "")),
        item.get("kernel") is True,
        str(item.get("file", "")),
        line if isinstance(line, int) and line > 0 else 0,
        item.get("inlined") is True,
        item.get("unresolved") is True,
    )


def _list(doc: dict[str, Any], key: str) -> list[Any]:
    value = doc.get(key)
    if not isinstance(value, list):
        raise SpeedscopeError(f"'{key}' is missing or not a list")
    return value


def from_speedscope(doc: object) -> SavedProfile:
    """Read sampled profiles; samples naming a frame that does not exist are skipped."""
    if not isinstance(doc, dict) or not isinstance(doc.get("shared"), dict):
        raise SpeedscopeError("not a speedscope file (no 'shared' frames)")
    frames = [_frame_from(item) for item in _list(doc["shared"], "frames")]
    stacks: list[SavedStack] = []
    skipped = 0
    for profile in _list(doc, "profiles"):
        if not isinstance(profile, dict) or profile.get("type") != "sampled":
            raise SpeedscopeError("only sampled profiles can be read (not evented ones)")
        group = str(profile.get("name", "")) or "[unknown]"
        samples, weights = _list(profile, "samples"), _list(profile, "weights")
        if len(samples) != len(weights):
            raise SpeedscopeError(f"profile '{group}' has {len(samples)} samples but "
                                  f"{len(weights)} weights")  # fmt: skip
        for sample, weight in zip(samples, weights, strict=True):
            ok = isinstance(sample, list) and isinstance(weight, int | float)
            ok = ok and math.isfinite(weight) and weight >= 0
            ok = ok and all(isinstance(i, int) and 0 <= i < len(frames) for i in sample)
            if not ok:
                skipped += 1
                continue
            if weight:
                path = tuple(frames[i] for i in sample)
                stacks.append(SavedStack(group, path, round(weight)))
    extra = doc.get("bpftop")
    pairs = [(str(k), str(v)) for k, v in extra.items()] if isinstance(extra, dict) else []
    return SavedProfile(ProfileMeta.from_items(pairs), tuple(stacks), skipped)
