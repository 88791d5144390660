"""The ``bpftop`` command: ``main`` parses arguments and runs the live view or
``record``; ``files`` runs ``view`` and ``diff`` on saved profiles."""
