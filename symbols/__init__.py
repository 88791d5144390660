"""Turning addresses into frames: /proc/PID/maps normalization, ELF symbol
tables (pyelftools) and /proc/kallsyms.

Nothing here imports ``bpftop.bpf`` or Textual. An address that cannot be
resolved becomes a :class:`~bpftop.symbols.frame.Frame` with a reason, never an
exception.
"""
