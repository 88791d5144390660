"""Saved profiles and their file formats: folded, speedscope, pprof, SVG.

``saved`` is the format-neutral saved profile; each format module reads or
writes it; ``profile_io`` picks the format and does the file I/O (atomic
writes in ``atomic``). No Textual.
"""
