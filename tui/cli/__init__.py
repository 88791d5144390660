"""The ``bpftop`` command. ``main`` picks the mode; ``live`` runs the live view and
``record`` samples to a file (both through ``session``: checks, the collector,
clean ends); ``files`` saves recordings and runs ``view`` and ``diff`` on saved
profiles; ``args`` holds every parser and ``gc_tuning`` the garbage collector's
settings. Nothing here imports back up the chain: ``main`` -> ``live`` /
``record`` -> ``session``, and ``files`` -> ``args``, ``gc_tuning``."""
