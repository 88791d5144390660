"""Write README.md's "Keys" table from the bindings and their help (``bpftop.tui.app.keys``).

Run after changing a binding or a help row: ``.venv/bin/python scripts/readme_keys.py``.
tests/tui/test_keys.py fails while README's table differs from what this writes.
"""

from __future__ import annotations

import re
from pathlib import Path

from bpftop.tui.app.keys import markdown_table

README = Path(__file__).resolve().parent.parent / "README.md"
TABLE = re.compile(r"^(## Keys\n\n)(?:\|.*\n)+", re.MULTILINE)
"""The markdown table right under the "## Keys" heading."""


def main() -> int:
    text = README.read_text()
    if TABLE.search(text) is None:
        print(f"{README}: no table under '## Keys'")
        return 1
    written = TABLE.sub(lambda m: m.group(1) + markdown_table(), text, count=1)
    if written != text:
        README.write_text(written)
    print(f"{README}: keys table {'written' if written != text else 'already up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
