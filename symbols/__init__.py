"""Turning addresses into frames: /proc/PID/maps normalization, ELF symbol
tables (pyelftools), separate debug files, DWARF lines and inline chains, JIT
perf maps, /proc/kallsyms, and unwind tables from .eh_frame / .debug_frame
(decoded here, without pyelftools).

Modules: ``symbolizer`` (the front door), ``process`` (one process), ``maps``,
``elf`` (symbol index of one file), ``elf_cache`` (in-memory, by file
identity), ``disk_cache`` (on disk, by build-id), ``debuginfo`` (finding debug
files), ``dwarf`` (lazy lines and inlines), ``perfmap`` (JIT), ``demangle``,
``hints`` (what to do about an unresolved frame), ``kallsyms``, ``frame``;
``unwind_table`` (one file's rows) from ``eh_frame`` (CIEs and FDEs),
``cfa_program`` (their instructions), ``cfa_rules`` (the walker's rule forms)
and ``elf_sections`` (section bytes), ``unwind_cache`` (on disk).

Nothing here imports ``bpftop.bpf`` or Textual. An address that cannot be
resolved becomes a :class:`~bpftop.symbols.frame.Frame` with a reason, never an
exception.
"""
