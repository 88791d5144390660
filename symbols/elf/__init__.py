"""ELF files: symbol indexes (PT_LOAD segments, sorted function starts), their
caches in memory and on disk, sections read with ``struct``, PLT stub names,
separate debug files, and a process's executable mappings with their load bias."""
