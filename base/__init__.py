"""The base every room stands on: the error family and the crash log.

``errors``: :class:`~bpftop.base.errors.BpftopError`, the one exception
family for what a user must fix (each with its exit code and hint), and the
internal error's code. ``crash_log``: where a bug's traceback goes. Nothing
here imports another room of bpftop.
"""
