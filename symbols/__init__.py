"""Turning addresses into frames, in rooms like blazesym's sources.

At the top: ``symbolizer`` (the front door: addresses in, frames out),
``process`` (one process's user-space addresses), ``file_cache`` (every
file's indexes, parsed once), ``kallsyms`` (the kernel), ``perfmap`` (JIT
code), ``frame`` (the value every address becomes, and the kinds of address,
kept apart by type) and ``hints`` (what to do about an unresolved frame).
The rooms:

- ``elf/``: symbol indexes of ELF files, their caches, sections, PLT stubs,
  debug files, and the executable mappings' load bias;
- ``dwarf/``: source lines and inlined functions;
- ``unwind/``: ``.eh_frame``/``.debug_frame`` decoded into the BPF walker's
  tables, and the user-space walk of a copied stack;
- ``python/``: CPython's interpreter found and read from outside;
- ``names/``: demangling and short names;
- ``proc/``: a process's mappings (/proc/PID/maps, each mapped file's
  identity) and, for a process that execs, each image's.

Nothing here imports ``bpftop.bpf`` or Textual. An address that cannot be
resolved becomes a :class:`~bpftop.symbols.frame.Frame` with a reason, never an
exception.
"""
