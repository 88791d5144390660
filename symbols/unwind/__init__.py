"""Unwind tables: ``.eh_frame``/``.debug_frame`` decoded into the rows the BPF
walker follows (``eh_frame``, ``cfa_program``, ``cfa_rules``), the compact
per-file tables (``table``, cached on disk by ``cache``), live processes'
tables by pc (``process_tables``), the user-space walk of a copied stack
(``stack_walk``) and function ranges for code no symbol names (``fde_index``)."""
