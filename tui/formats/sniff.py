"""Which format a saved profile's bytes are in, decided by their structure.

``classify`` tells pprof (gzip magic), speedscope (a JSON object) and folded
text (a first stack line ``frames COUNT``) apart; SVG/XML is refused with a
hint. A first frame like py-spy's ``<module>`` is folded, not XML: the
shape of the first line decides, not its first character. Text that is not
valid UTF-8 is decoded with ``surrogateescape`` so that only the folded lines
with bad bytes are lost (``drop_bad_lines`` removes and counts them); in
speedscope JSON they become U+FFFD. No I/O.
"""

from __future__ import annotations

import re

from bpftop.tui.formats.registry import FileFormat, ProfileFileError, by_name

_FOLDED_LINE = re.compile(r"[^\n]*\S[ \t]+\d+(?:[ \t]+\d+)?[ \t]*\r?")
_XML_START = re.compile(r"<(?:\?xml|svg|!DOCTYPE|!--|html)\b", re.IGNORECASE)
_BAD_LINE = re.compile(r"^[^\n]*[\udc80-\udcff][^\n]*(?:\n|$)", re.MULTILINE)


def decode_text(data: bytes) -> str:
    """UTF-8 text; undecodable bytes become lone surrogates (``drop_bad_lines``)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="surrogateescape")


def drop_bad_lines(text: str) -> tuple[str, int]:
    """``text`` without the lines that held undecodable bytes, and how many there were."""
    try:
        text.encode("utf-8")  # fails only when a lone surrogate (a bad byte) is present
    except UnicodeEncodeError:
        return _BAD_LINE.subn("", text)
    return text, 0


def _first_line(text: str) -> str:
    for line in text.lstrip().splitlines():
        if line.strip():
            return line
    return ""


def is_text_profile(data: bytes) -> bool:
    """Whether inflated gzip data is a text profile (folded or speedscope), not pprof."""
    first = _first_line(decode_text(data[:65536]))
    return first.lstrip().startswith("{") or bool(_FOLDED_LINE.fullmatch(first))


def classify(data: bytes, source: object) -> tuple[FileFormat, bytes | str]:
    """The registry's format of ``data`` and its payload: pprof and gzip bytes (a
    gzipped text profile too: the caller inflates and classifies again),
    speedscope and JSON text, or folded and text."""
    if data[:2] == b"\x1f\x8b":
        return by_name("pprof"), data
    text = decode_text(data)
    first = _first_line(text)
    if first.lstrip().startswith("{"):  # bad bytes in JSON strings become U+FFFD
        return by_name("speedscope"), data.decode("utf-8", errors="replace")
    if _FOLDED_LINE.fullmatch(first):
        return by_name("folded"), text
    if _XML_START.match(first.lstrip()):
        raise ProfileFileError(
            f"{source} looks like XML/SVG", "an SVG flame graph cannot be read back; "
            "use the folded, speedscope or pprof file",
        )  # fmt: skip
    return by_name("folded"), text  # lines without counts are skipped and counted
