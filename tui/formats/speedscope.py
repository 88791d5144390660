"""speedscope's JSON file format to and from a ``SavedProfile``.

One ``sampled`` profile per stack group (process or thread), named
``GROUP`` with weights in samples or events (unit ``none``) or, for a time
probe, in ``nanoseconds``; every frame once in
``shared.frames`` with ``file``/``line`` where DWARF knew them (a Python
frame: its function as the name, its source path and line, as py-spy
writes them). The schema
allows extra members, so frames also carry ``module``/``kernel``/``inlined``/
``unresolved`` and the file a ``bpftop`` object with the metadata; other
tools ignore them, bpftop reads them back. Files of other tools keep
fractional weights (summed per stack) and time units become nanoseconds;
their name and exporter go into ``ProfileMeta.source``. No I/O here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from bpftop.tui.formats.registry import Fill, FormatError, WholeProfileCodec
from bpftop.tui.formats.saved import (
    NANOSECONDS,
    ProfileMeta,
    SavedFrame,
    SavedProfile,
    SavedStack,
    python_frame,
    python_function,
)

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"
TIME_UNITS = {"nanoseconds": 1.0, "microseconds": 1e3, "milliseconds": 1e6, "seconds": 1e9}
"""speedscope's time units, in nanoseconds."""


class SpeedscopeError(FormatError):
    """The JSON is not a speedscope file bpftop can read."""


def _frame_json(frame: SavedFrame) -> dict[str, Any]:
    python = python_function(frame)  # its function; the file its whole path
    out: dict[str, Any] = {"name": frame.name if python is None else python}
    if frame.file:
        out["file"] = frame.file if python is None else frame.module
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
    unit = NANOSECONDS if saved.meta.timed else "none"
    for group, (samples, weights) in by_group.items():
        total = sum(weights)
        profiles.append({
            "type": "sampled", "name": group, "unit": unit,
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
    module, file = item.get("module"), item.get("file")
    if isinstance(module, str) and module and file == module and isinstance(line, int) and line > 0:
        return python_frame(item["name"], module, line)
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


def _scale(profile: dict[str, Any], timed: bool) -> float | None:
    """What turns one weight into a count: ns per unit for time, 1 for others; None:
    a non-time profile in a file whose other profiles are time (it cannot be mixed in)."""
    unit = str(profile.get("unit", "none"))
    if unit in TIME_UNITS:
        return TIME_UNITS[unit]
    return None if timed else 1.0


def _read_profile(
    profile: object,
    frames: list[SavedFrame],
    timed: bool,
    sums: dict[tuple[str, tuple[int, ...]], float],
) -> int:
    """Add one sampled profile's weights to ``sums``; the number of samples skipped."""
    if not isinstance(profile, dict) or profile.get("type") != "sampled":
        raise SpeedscopeError("only sampled profiles can be read (not evented ones)")
    group = str(profile.get("name", "")) or "[unknown]"
    samples, weights = _list(profile, "samples"), _list(profile, "weights")
    if len(samples) != len(weights):
        raise SpeedscopeError(f"profile '{group}' has {len(samples)} samples but "
                              f"{len(weights)} weights")  # fmt: skip
    scale = _scale(profile, timed)
    if scale is None:
        return len(samples)
    skipped = 0
    for sample, weight in zip(samples, weights, strict=True):
        ok = isinstance(sample, list) and isinstance(weight, int | float)
        ok = ok and math.isfinite(weight) and weight >= 0
        ok = ok and all(isinstance(i, int) and 0 <= i < len(frames) for i in sample)
        if not ok:
            skipped += 1
        elif weight:
            key = (group, tuple(sample))
            sums[key] = sums.get(key, 0.0) + weight * scale
    return skipped


def _own_meta(doc: dict[str, Any], profiles: list[Any], timed: bool) -> ProfileMeta:
    """What a speedscope file another tool wrote says about itself."""
    units = dict.fromkeys(str(p.get("unit", "none")) for p in profiles if isinstance(p, dict))
    span_ns = 0
    for p in profiles:
        if timed and isinstance(p, dict) and str(p.get("unit")) in TIME_UNITS:
            start, end = p.get("startValue", 0), p.get("endValue", 0)
            if isinstance(start, int | float) and isinstance(end, int | float):
                span = (end - start) * TIME_UNITS[str(p["unit"])]
                span_ns = max(span_ns, round(span) if math.isfinite(span) else 0)
    names = [str(doc[k]) for k in ("exporter", "name") if isinstance(doc.get(k), str) and doc[k]]
    return ProfileMeta(
        end_ns=span_ns, unit=NANOSECONDS if timed else "", sample_type=", ".join(units),
        source=" / ".join(names) or "speedscope",
    )  # fmt: skip


def from_speedscope(doc: object) -> SavedProfile:
    """Read sampled profiles; samples naming a frame that does not exist are skipped.

    Weights may be fractional: they are summed per stack, time units (py-spy
    writes seconds) converted to nanoseconds, and only the sums rounded.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("shared"), dict):
        raise SpeedscopeError("not a speedscope file (no 'shared' frames)")
    frames = [_frame_from(item) for item in _list(doc["shared"], "frames")]
    profiles = _list(doc, "profiles")
    timed = any(isinstance(p, dict) and p.get("unit") in TIME_UNITS for p in profiles)
    sums: dict[tuple[str, tuple[int, ...]], float] = {}
    skipped = sum(_read_profile(profile, frames, timed, sums) for profile in profiles)
    for (group, _), total in sums.items():
        if not math.isfinite(total):  # finite weights whose sum is not (1e308 + 1e308)
            raise SpeedscopeError(f"profile '{group}': weights sum past the largest number")
    stacks = [
        SavedStack(group, tuple(frames[i] for i in sample), round(total))
        for (group, sample), total in sums.items()
        if round(total) > 0
    ]
    extra = doc.get("bpftop")
    if isinstance(extra, dict):
        meta = ProfileMeta.from_items([(str(k), str(v)) for k, v in extra.items()])
    else:
        meta = _own_meta(doc, profiles, timed)
    return SavedProfile(meta, tuple(stacks), skipped)


class SpeedscopeCodec(WholeProfileCodec):
    """speedscope JSON, compact; read back from bpftop's files and other tools'."""

    def writer(self, saved: SavedProfile, build_ids: Mapping[str, str]) -> Fill:
        text = json.dumps(to_speedscope(saved), separators=(",", ":"))
        return lambda out: out.write(text.encode())

    def read(self, payload: bytes | str) -> SavedProfile:
        try:
            return from_speedscope(json.loads(payload))
        except json.JSONDecodeError as err:
            raise FormatError(
                f"broken JSON at line {err.lineno} column {err.colno} ({err.msg})",
                "the file may be truncated; export it again",
            ) from None


CODEC = SpeedscopeCodec()
