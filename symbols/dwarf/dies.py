"""Reading DWARF with pyelftools: a DIE's names and address ranges, a compile
unit's file table and line rows.

Owns the small readers :class:`~bpftop.symbols.dwarf.index.DwarfIndex` builds its
units with (moved here from :mod:`bpftop.symbols.dwarf.index` so each module stays
small). Everything here takes pyelftools' objects (a ``DWARFInfo``, a
``CompileUnit``, a ``DIE``) and returns plain values; callers catch what
pyelftools raises on a broken file.
"""

from __future__ import annotations

import os
from typing import Any


def die_names(die: Any) -> tuple[str | None, str | None]:
    """``(DW_AT_name, DW_AT_linkage_name)`` through abstract origins and specifications."""
    name = linkage = None
    for _ in range(8):
        attrs = die.attributes
        for key in ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name"):
            if linkage is None and key in attrs:
                linkage = text(attrs[key].value)
        if name is None and "DW_AT_name" in attrs:
            name = text(attrs["DW_AT_name"].value)
        if name is not None and linkage is not None:
            break
        links = ("DW_AT_abstract_origin", "DW_AT_specification")
        nxt = next((k for k in links if k in attrs), None)
        if nxt is None:
            break
        die = die.get_DIE_from_attribute(nxt)
    return name, linkage


def attr_value(die: Any, name: str) -> Any:
    """An attribute's value, or None."""
    attr = die.attributes.get(name)
    return None if attr is None else attr.value


def text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def die_ranges(dwarf: Any, cu: Any, die: Any) -> list[tuple[int, int]]:
    """The ``[low, high)`` address ranges of a DIE (low/high pc, else its range list)."""
    attrs = die.attributes
    if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
        low = attrs["DW_AT_low_pc"].value
        high_attr = attrs["DW_AT_high_pc"]
        high = high_attr.value if high_attr.form == "DW_FORM_addr" else low + high_attr.value
        return [(low, high)] if high > low else []
    if "DW_AT_ranges" not in attrs:
        return []
    range_lists = dwarf.range_lists()
    if range_lists is None:
        return []
    base = 0
    top = cu.get_top_DIE()
    if "DW_AT_low_pc" in top.attributes:
        base = top.attributes["DW_AT_low_pc"].value
    result = []
    for entry in range_lists.get_range_list_at_offset(attrs["DW_AT_ranges"].value, cu=cu):
        if hasattr(entry, "base_address"):
            base = entry.base_address
        elif entry.end_offset > entry.begin_offset:
            shift = 0 if entry.is_absolute else base
            result.append((entry.begin_offset + shift, entry.end_offset + shift))
    return result


def file_names(dwarf: Any, cu: Any) -> list[str | None]:
    """The CU line program's file table as paths, indexed as DWARF indexes them."""
    program = dwarf.line_program_for_CU(cu)
    if program is None:
        return []
    top = cu.get_top_DIE()
    comp_dir = text(attr_value(top, "DW_AT_comp_dir") or "")
    version = program["version"]
    dirs = [text(d) for d in program["include_directory"]]
    if version < 5:
        dirs = [comp_dir, *dirs]  # DWARF 4: directory 0 is the CU's, files count from 1
    names: list[str | None] = [] if version >= 5 else [None]
    for entry in program["file_entry"]:
        name = text(entry.name)
        index = entry.dir_index
        folder = dirs[index] if 0 <= index < len(dirs) else ""
        if folder and not folder.startswith("/") and comp_dir:
            folder = os.path.join(comp_dir, folder)
        names.append(name if name.startswith("/") else os.path.join(folder, name))
    return names


def file_at(files: list[str | None], index: Any) -> str | None:
    return files[index] if isinstance(index, int) and 0 <= index < len(files) else None


LineRows = tuple[list[int], list[str | None], list[int]]


def read_lines(dwarf: Any, cu: Any, files: list[str | None]) -> LineRows:
    """The CU's line rows as sorted arrays ``(addresses, files, lines)``: one row
    per address (the last of the program wins, unless it has no line), and a
    row with line 0 at each sequence's end (nothing past it)."""
    addrs: list[int] = []
    paths: list[str | None] = []
    numbers: list[int] = []
    program = dwarf.line_program_for_CU(cu)
    if program is None:
        return addrs, paths, numbers
    rows: list[tuple[int, str | None, int]] = []
    for entry in program.get_entries():
        state = entry.state
        if state is None:
            continue
        if state.end_sequence:
            rows.append((state.address, None, 0))  # nothing past a sequence's end
        else:
            rows.append((state.address, file_at(files, state.file), state.line))
    # Stable: for equal addresses the last row of the program wins after dedupe.
    rows.sort(key=lambda r: r[0])
    for addr, path, line in rows:
        if addrs and addrs[-1] == addr:
            if line > 0 or numbers[-1] <= 0:
                paths[-1], numbers[-1] = path, line
            continue
        addrs.append(addr)
        paths.append(path)
        numbers.append(line)
    return addrs, paths, numbers
