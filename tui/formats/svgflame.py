"""An interactive, self-contained SVG flame graph of a ``SavedProfile``.

An icicle (root on top, as the TUI's flame view), one ``<g class="f">`` per
frame wide enough to see, colored by kind (user code by module, kernel,
inlined, unknown). The embedded script (``svgflame.js`` beside this file,
inlined into the SVG) shows a frame's details on hover (its count in the
probe's own unit: samples, calls, hits, or time for time probes), zooms into a frame
on click (click the root or "Reset zoom" to go back) and highlights the
frames a regex matches ("Search"). Metadata is in the title line and in
``<desc>``. No I/O here.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from xml.sax.saxutils import escape, quoteattr

from bpftop.tui.formats.measures import Measure, measure_of
from bpftop.tui.formats.registry import Fill, FormatError, WholeProfileCodec
from bpftop.tui.formats.saved import SavedFrame, SavedProfile

WIDTH_PX = 1200
ROW_PX = 17
TOP_PX = 56
MIN_WIDTH_PX = 0.3  # narrower frames are left out (they could not be seen or clicked)


@dataclass(slots=True)
class _Node:
    frame: SavedFrame
    total: int = 0
    children: dict[SavedFrame, _Node] = field(default_factory=dict)


def _trie(saved: SavedProfile, min_total: float) -> _Node:
    """The flame graph's nodes with at least ``min_total`` counts (those wide
    enough to draw), groups first. Stacks are read in sorted order, so a node
    is complete when the path moves past it: it is kept if wide enough, else
    dropped with everything below it. (A trie of every node held 1.7 million
    nodes at 40,000 stacks of depth ~44: +488 MiB; bench.model_scale --write.)"""
    root = _Node(SavedFrame("all"))
    ids: dict[SavedFrame, int] = {}
    paths = []
    for stack in saved.stacks:
        frames = (SavedFrame(stack.thread), *stack.frames)
        paths.append((tuple(ids.setdefault(f, len(ids)) for f in frames), frames, stack.count))
    paths.sort(key=lambda path: path[0])
    open_ids: tuple[int, ...] = ()
    open_nodes: list[_Node] = [root]  # root, then the nodes of ``open_ids``

    def close(depth: int) -> None:
        """Finish the open nodes deeper than ``depth`` (innermost first)."""
        while len(open_nodes) > depth + 1:
            node = open_nodes.pop()
            if node.total >= min_total:
                open_nodes[-1].children[node.frame] = node

    for path_ids, frames, count in paths:
        shared = 0
        for mine, theirs in zip(open_ids, path_ids, strict=False):
            if mine != theirs:
                break
            shared += 1
        close(shared)
        open_nodes.extend(_Node(frame) for frame in frames[shared:])
        open_ids = path_ids
        for node in open_nodes:
            node.total += count
    close(0)
    return root


def frame_color(frame: SavedFrame) -> str:
    """Kernel blue, inlined teal, unknown grey, user code warm with a hue per module."""
    if frame.unresolved:
        return "rgb(170,170,170)"
    if frame.kernel:
        return "rgb(110,150,225)"
    if frame.inlined:
        return "rgb(90,190,170)"
    shade = zlib.crc32(frame.module.encode()) % 60
    return f"rgb(235,{90 + shade},{40 + shade // 2})"


def _details(frame: SavedFrame, total: int, all_total: int, measure: Measure) -> str:
    kind = "kernel" if frame.kernel else "inlined" if frame.inlined else "user"
    where = f" in {frame.module}" if frame.module else ""
    source = f" at {frame.source}" if frame.source else ""
    share = 100 * total / max(1, all_total)
    return f"{frame.name}{where}{source} ({kind}): {measure.words(total)}, {share:.2f}%"


def _frames(root: _Node, measure: Measure) -> list[str]:
    """The ``<g>`` elements, depth-first, children hottest first."""
    out: list[str] = []
    px_per_sample = WIDTH_PX / max(1, root.total)
    todo = [(root, 0, 0)]
    while todo:
        node, depth, x = todo.pop()
        width = node.total * px_per_sample
        frame = node.frame
        text = _details(frame, node.total, root.total, measure)
        out.append(
            f'<g class="f" data-x="{x}" data-w="{node.total}" data-d="{depth}" '
            f"data-n={quoteattr(frame.name)} data-t={quoteattr(text)}>"
            f"<title>{escape(text)}</title>"
            f'<rect x="{x * px_per_sample:.2f}" y="{TOP_PX + depth * ROW_PX}" '
            f'width="{width:.2f}" height="{ROW_PX - 1}" fill="{frame_color(frame)}" rx="2"/>'
            f'<text x="{x * px_per_sample + 3:.2f}" y="{TOP_PX + depth * ROW_PX + 12}"></text>'
            "</g>"
        )
        kids = sorted(node.children.values(), key=lambda n: -n.total)
        offset = x + node.total
        for child in reversed(kids):
            offset -= child.total
            if child.total * px_per_sample >= MIN_WIDTH_PX:
                todo.append((child, depth + 1, offset))
    return out


def _depth(root: _Node) -> int:
    deepest, todo = 0, [(root, 0)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        todo.extend((child, depth + 1) for child in node.children.values())
    return deepest


def _facts(saved: SavedProfile) -> str:
    """The metadata in words: times as UTC dates, the duration in seconds."""
    meta = saved.meta
    shown = {"start_ns", "end_ns", "version"}
    words = [f"{name}: {text}" for name, text in meta.items() if name not in shown]
    words.append(f"one count: {measure_of(meta).words(1)}")
    if meta.start_ns:
        start = datetime.fromtimestamp(meta.start_ns / 1e9, UTC)
        words.append(f"recorded {start:%Y-%m-%d %H:%M:%S} UTC for {meta.duration_ns / 1e9:.1f} s")
    return "  ".join(words)


def to_svg(saved: SavedProfile, title: str = "bpftop flame graph") -> str:
    """The whole SVG document."""
    root = _trie(saved, MIN_WIDTH_PX * saved.total / WIDTH_PX)
    measure = measure_of(saved.meta)
    frames = _frames(root, measure)
    height = TOP_PX + (_depth(root) + 1) * ROW_PX + 24
    meta = saved.meta
    facts = _facts(saved)
    script = resources.files(__package__).joinpath("svgflame.js").read_text(encoding="utf-8")
    version = escape(meta.version)
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH_PX}" '
        f'height="{height}" viewBox="0 0 {WIDTH_PX} {height}" data-total="{root.total}">',
        f"<title>{escape(title)}</title>",
        f"<desc>{escape(facts)} bpftop {version}</desc>",
        "<style>text{font:12px monospace;fill:#000;pointer-events:none}"
        " g.f rect{stroke:#fff;stroke-width:0.5;cursor:pointer} g.f.hit rect{fill:#e040e0}"
        " text.ui{font:12px sans-serif;cursor:pointer;fill:#225;pointer-events:auto}</style>",
        '<rect width="100%" height="100%" fill="#fafafa"/>',
        f'<text x="{WIDTH_PX / 2}" y="18" text-anchor="middle" '
        f'style="font:bold 15px sans-serif">{escape(title)}</text>',
        f'<text x="8" y="36" style="font:11px sans-serif">{escape(facts)[:400]}</text>',
        '<text id="reset" class="ui" x="8" y="50" style="display:none">Reset zoom</text>',
        f'<text id="search" class="ui" x="{WIDTH_PX - 160}" y="50">Search</text>',
        f'<text id="matched" x="{WIDTH_PX - 100}" y="50" style="font:12px sans-serif"></text>',
        f'<text id="details" x="8" y="{height - 8}" style="font:12px monospace"> </text>',
        '<g id="frames">',
        *frames,
        "</g>",
        f"<script><![CDATA[\n{script}\n]]></script>",
        "</svg>",
        "",
    ])  # fmt: skip


class SvgCodec(WholeProfileCodec):
    """A flame graph to look at: written, never read back."""

    def writer(self, saved: SavedProfile, build_ids: Mapping[str, str]) -> Fill:
        svg = to_svg(saved)
        return lambda out: out.write(svg.encode())

    def read(self, payload: bytes | str) -> SavedProfile:
        raise FormatError(
            "an SVG flame graph cannot be read back", "use the folded, speedscope or pprof file"
        )


CODEC = SvgCodec()
