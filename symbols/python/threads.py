"""Thread names from Python's ``threading`` module, read from a live CPython 3.11-3.14.

Owns :class:`PythonThreadNames` (one process): thread id -> the name given to
``threading.Thread(name=...)`` (``MainThread``, ``Thread-3 (run)``...). The
path: ``_PyRuntime.interpreters.head`` -> the main interpreter's ``modules``
(``imports.modules``: 3.11 +888 and 3.12 +944 from offsetof() against
Debian's 3.11.2 headers and the DWARF of 3.12.1, 3.13+ from the process's
``_Py_DebugOffsets``; checked by the dict type there) -> ``sys.modules['threading']``
-> its ``_active`` dict (ident -> Thread) -> each Thread's ``_native_id``
(3.8+: the thread's id in its own pid namespace, turned into the kernel's,
which samples carry, through its threads' ``NSpid``) and ``_name``. Every
object is checked against its type
(:class:`~bpftop.symbols.python.objects.ObjectReader`, which follows each
version's object layouts); the ``_active`` dict's address is kept (the module
never rebinds it) and checked again at each read. A process that never
imported ``threading``, or whose objects cannot be read, gives a reason
instead of names.
"""

from __future__ import annotations

import os

from bpftop.symbols.python.objects import ObjectReader
from bpftop.symbols.python.runtime import PythonRuntime

MAX_THREADS = 4096  # a bigger _active is not read


class PythonThreadNames:
    """Names of the Python threads of the process of ``runtime``."""

    def __init__(self, runtime: PythonRuntime) -> None:
        self.runtime = runtime
        self._path = f"/proc/{runtime.pid}/mem"
        self._active = 0  # the _active dict's address, once found

    def read(self) -> dict[int, str] | str:
        """thread id (the kernel's) -> name, or why there are none."""
        try:
            with open(self._path, "rb", buffering=0) as mem:
                found = self._read(ObjectReader(mem, self.runtime.types, self.runtime.layout))
        except OSError as err:
            return f"process memory unreadable: {err.strerror}"
        kernel = kernel_tids(self.runtime.pid) if isinstance(found, dict) else None
        if kernel is None or isinstance(found, str):
            return found
        return {kernel[tid]: name for tid, name in found.items() if tid in kernel}

    def _read(self, reader: ObjectReader) -> dict[int, str] | str:
        if not reader.is_a(self._active, self.runtime.types.dict_type):
            found = self._find_active(reader)
            if isinstance(found, str):
                return found
            self._active = found
        names: dict[int, str] = {}
        for count, (_ident, thread) in enumerate(reader.dict_items(self._active)):
            if count >= MAX_THREADS:
                break
            attrs = dict(_named(reader, thread, ("_name", "_native_id")))
            name = reader.string(attrs.get("_name", 0))
            native_id = reader.integer(attrs.get("_native_id", 0))
            if name is not None and native_id is not None and native_id > 0:
                names[native_id] = name
        return names

    def _find_active(self, reader: ObjectReader) -> int | str:
        layout = self.runtime.layout
        if not layout.imports_modules:
            return f"threading names are not read from CPython {self.runtime.version}"
        interp = reader.pointer(self.runtime.runtime_addr + layout.interpreters_head)
        modules = reader.pointer(interp + layout.imports_modules) if interp else 0
        if not reader.is_a(modules, self.runtime.types.dict_type):
            return "no sys.modules dict where expected"
        threading = reader.dict_get(modules, "threading")
        if threading is None:
            return "threading not imported"
        active = reader.module_attr(threading, "_active")
        if active is None or not reader.is_a(active, self.runtime.types.dict_type):
            return "threading._active not found"
        return active


def kernel_tids(pid: int, proc_root: str = "/proc") -> dict[int, int] | None:
    """The process's thread ids as it sees them -> the kernel's (its threads'
    ``NSpid``: the kernel's first, its own namespace's last); None when it
    sees the kernel's own (no pid namespace of its own) or is gone."""
    own = _nspid(f"{proc_root}/{pid}/status")
    if own is None or len(own) == 1:
        return None
    found: dict[int, int] = {}
    try:
        tasks = os.listdir(f"{proc_root}/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        ids = _nspid(f"{proc_root}/{pid}/task/{task}/status")
        if ids:
            found[ids[-1]] = ids[0]
    return found


def _nspid(path: str) -> list[int] | None:
    try:
        with open(path, encoding="ascii", errors="replace") as stream:
            for line in stream:
                if line.startswith("NSpid:"):
                    return [int(field) for field in line.split()[1:]]
    except (OSError, ValueError):
        return None
    return None


def _named(reader: ObjectReader, obj: int, wanted: tuple[str, ...]) -> list[tuple[str, int]]:
    """The attributes ``wanted`` of instance ``obj`` that it has, in one pass."""
    found: list[tuple[str, int]] = []
    for key, value in reader.instance_attrs(obj):
        name = reader.string(key)
        if name in wanted:
            found.append((name, value))
            if len(found) == len(wanted):
                break
    return found
