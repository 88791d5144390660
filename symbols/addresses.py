"""The three kinds of address symbolization juggles, kept apart by type.

An :data:`Address` is an absolute address in a process (or the kernel), a
:data:`FileOffset` is an offset into a mapped file, and an :data:`ElfVaddr` is
a virtual address as the ELF file itself numbers it (what ``nm`` prints).
"""

from __future__ import annotations

from typing import NewType

Address = NewType("Address", int)
FileOffset = NewType("FileOffset", int)
ElfVaddr = NewType("ElfVaddr", int)
