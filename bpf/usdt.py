"""USDT probes (SystemTap SDT notes, ``<sys/sdt.h>``) read from an ELF file.

Owns :func:`usdt_notes`: every ``stapsdt`` note of ``.note.stapsdt`` as a
:class:`UsdtNote` (provider, name, the probe's address, and its semaphore's
address and file offset), read with pyelftools; no libbcc. BCC's ``USDT``
class is not used: its probe objects hold a raw pointer to a context that is
freed as soon as the ``USDT`` object is collected, so ``USDT(path=p)
.enumerate_probes()`` then ``probe.get_location(i)`` read freed memory
(bpftop died of SIGSEGV or SIGBUS there, on one thread, before it read the
notes itself). The semaphore's file offset is what the kernel takes as a
uprobe's ``ref_ctr_offset`` (:mod:`bpftop.bpf.libbcc`).
"""

from __future__ import annotations

import functools
import os
import struct
from dataclasses import dataclass

from elftools.elf.elffile import ELFFile

NOTE_SECTION = ".note.stapsdt"
BASE_SECTION = ".stapsdt.base"  # its address now vs in the note: prelink's shift
NT_STAPSDT = 3


@dataclass(frozen=True, slots=True)
class UsdtNote:
    """One probe site. ``address``: its virtual address in the file (as a
    uprobe on the file takes it); ``semaphore``: the semaphore's virtual
    address (0: the probe has none); ``semaphore_offset``: the semaphore's
    offset in the file (0: none)."""

    provider: str
    name: str
    address: int
    semaphore: int = 0
    semaphore_offset: int = 0

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"


class UsdtReadError(Exception):
    """The file's notes could not be read (not an ELF file, damaged, unreadable)."""


def file_key(path: str) -> tuple[int, ...]:
    """What tells the file ``path`` names now from another: a cache of what
    was read by path is keyed by it too (``/proc/PID/root/...`` names the
    root's file once PID has changed root; a file can be replaced)."""
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def usdt_notes(path: str) -> tuple[UsdtNote, ...]:
    """Every USDT probe site of an ELF file, in note order (no notes: empty)."""
    return _usdt_notes(path, file_key(path))


@functools.lru_cache(maxsize=32)
def _usdt_notes(path: str, _key: tuple[int, ...]) -> tuple[UsdtNote, ...]:
    try:
        with open(path, "rb") as file:
            if file.read(4) != b"\x7fELF":
                raise UsdtReadError("not an ELF file")
            file.seek(0)
            elf = ELFFile(file)
            section = elf.get_section_by_name(NOTE_SECTION)
            if section is None:
                return ()
            base = elf.get_section_by_name(BASE_SECTION)
            base_now = int(base["sh_addr"]) if base is not None else None
            loads = [
                (int(s["p_vaddr"]), int(s["p_filesz"]), int(s["p_offset"]))
                for s in elf.iter_segments()
                if s["p_type"] == "PT_LOAD"
            ]
            data = section.data()
            wide = elf.elfclass == 64
            order = "<" if elf.little_endian else ">"
    except OSError as err:
        raise UsdtReadError(err.strerror or repr(err)) from None
    except UsdtReadError:
        raise
    except Exception as err:  # pyelftools raises many kinds on damaged files
        raise UsdtReadError(
            f"an ELF file pyelftools could not read ({type(err).__name__})"
        ) from None
    return tuple(_parse(data, order, wide, base_now, loads))


def _parse(
    data: bytes,
    order: str,
    wide: bool,
    base_now: int | None,
    loads: list[tuple[int, int, int]],
) -> list[UsdtNote]:
    notes = []
    header = struct.Struct(order + "III")
    addresses = struct.Struct(order + ("QQQ" if wide else "III"))
    at = 0
    while at + header.size <= len(data):
        namesz, descsz, kind = header.unpack_from(data, at)
        desc_at = at + header.size + _align4(namesz)
        owner = data[at + header.size : at + header.size + namesz]
        desc = data[desc_at : desc_at + descsz]
        at = desc_at + _align4(descsz)
        if kind != NT_STAPSDT or owner.rstrip(b"\0") != b"stapsdt" or len(desc) < addresses.size:
            continue
        pc, base, semaphore = addresses.unpack_from(desc)
        strings = desc[addresses.size :].split(b"\0")
        if len(strings) < 2:
            continue
        shift = base_now - base if base_now is not None and base else 0
        pc += shift
        semaphore = semaphore + shift if semaphore else 0
        notes.append(
            UsdtNote(
                provider=strings[0].decode(errors="replace"),
                name=strings[1].decode(errors="replace"),
                address=pc,
                semaphore=semaphore,
                semaphore_offset=_file_offset(semaphore, loads) if semaphore else 0,
            )
        )
    return notes


def _align4(size: int) -> int:
    return (size + 3) & ~3


def _file_offset(vaddr: int, loads: list[tuple[int, int, int]]) -> int:
    """Where virtual address ``vaddr`` is in the file (0: in no loaded part of it)."""
    for start, size, offset in loads:
        if start <= vaddr < start + size:
            return vaddr - start + offset
    return 0
