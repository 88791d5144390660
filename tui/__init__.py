"""bpftop's user-facing side: the CLI, the collector thread, the Textual app.

Only the modules in this package that say so import Textual; ``tui.model`` is
pure Python.
"""
