"""What /proc says of a process's memory: its mappings (``maps``: /proc/PID/maps,
and the identity of each mapped file) and, for a process that execs, each
image's mappings kept after it was replaced (``images``)."""
