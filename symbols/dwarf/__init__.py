"""DWARF for the frames on screen: source lines and inlined functions, read
lazily with pyelftools (``index``), what was learnt kept on disk (``cache``)."""
