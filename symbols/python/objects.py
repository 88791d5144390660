"""Reading CPython 3.11 objects (dicts, str, int, instance attributes) from /proc/PID/mem.

Owns :class:`ObjectReader`: every object it reads is checked against the
type it must have (``ob_type`` equal to the process's ``&PyDict_Type``,
``&PyUnicode_Type``, ``&PyLong_Type``, ``&PyModule_Type``; a class's own
type ``&PyType_Type``), and every size against a bound, because the objects
can change or be freed while they are read (nothing stops the process).
What cannot be read is None, never an exception.

Layouts (CPython 3.11 x86-64; offsetof() against /usr/include/python3.11's
internal headers, Debian's 3.11.2): ``PyDictObject`` ma_keys +32, ma_values
+40; ``PyDictKeysObject`` dk_log2_index_bytes +9, dk_kind +10 (0 general:
entries {hash, key, value}, 24 bytes; 1 unicode and 2 split: {key, value},
16 bytes), dk_nentries +24, dk_indices +32, the entries after
``1 << dk_log2_index_bytes`` index bytes; a split dict's values are
``ma_values[i]`` for entry i. ``PyModuleObject.md_dict`` +16. ``PyLongObject``
ob_size +16, 30-bit digits from +24. An instance of a class with
``Py_TPFLAGS_MANAGED_DICT`` (every plain class in 3.11) keeps its
attributes before its header: the values array at -32 (the keys are the
class's ``ht_cached_keys``, ``PyHeapTypeObject`` +872) or, once a dict was
made for it, that dict at -24.
"""

from __future__ import annotations

from collections.abc import Iterator

from bpftop.symbols.python.code import read_at, read_string, u64
from bpftop.symbols.python.runtime import ObjectTypes

OB_TYPE = 8
DICT_KEYS, DICT_VALUES, DICT_SIZE = 32, 40, 48
KEYS_LOG2_INDEX_BYTES, KEYS_KIND, KEYS_NENTRIES, KEYS_INDICES = 9, 10, 24, 32
KIND_GENERAL, KIND_UNICODE, KIND_SPLIT = 0, 1, 2
MODULE_DICT = 16
LONG_SIZE, LONG_DIGITS, DIGIT_BITS = 16, 24, 30
TYPE_FLAGS, HT_CACHED_KEYS = 168, 872
MANAGED_DICT, HEAP_TYPE = 1 << 4, 1 << 9
INSTANCE_VALUES, INSTANCE_DICT = -32, -24
MAX_ENTRIES = 1 << 16  # a dict bigger than this is not read (sys.modules: hundreds)
MAX_INDEX_LOG2 = 20


class ObjectReader:
    """Typed reads of one process's objects (``mem``: its /proc/PID/mem, open)."""

    def __init__(self, mem: object, types: ObjectTypes) -> None:
        self._mem = mem
        self._types = types

    def is_a(self, addr: int, type_addr: int) -> bool:
        """Is the object at ``addr`` exactly of the type at ``type_addr``?"""
        head = read_at(self._mem, addr + OB_TYPE, 8) if addr and type_addr else None
        return head is not None and u64(head, 0) == type_addr

    def pointer(self, addr: int) -> int:
        """The 8 bytes at ``addr`` (0 if unreadable)."""
        data = read_at(self._mem, addr, 8)
        return u64(data, 0) if data else 0

    def string(self, addr: int) -> str | None:
        if not self.is_a(addr, self._types.str_type):
            return None
        return read_string(self._mem, addr)

    def integer(self, addr: int) -> int | None:
        """A small int (at most three digits, 90 bits)."""
        if not self.is_a(addr, self._types.int_type):
            return None
        head = read_at(self._mem, addr + LONG_SIZE, 8)
        size = int.from_bytes(head, "little", signed=True) if head else 4
        if abs(size) > 3:
            return None
        digits = read_at(self._mem, addr + LONG_DIGITS, 4 * abs(size)) if size else b""
        if digits is None:
            return None
        value = sum(
            int.from_bytes(digits[4 * i : 4 * i + 4], "little") << (DIGIT_BITS * i)
            for i in range(abs(size))
        )
        return -value if size < 0 else value

    def dict_items(self, addr: int) -> Iterator[tuple[int, int]]:
        """(key, value) addresses of the dict at ``addr``; nothing if it is none."""
        if not self.is_a(addr, self._types.dict_type):
            return iter(())
        head = read_at(self._mem, addr, DICT_SIZE)
        if head is None:
            return iter(())
        return self._entries(u64(head, DICT_KEYS), u64(head, DICT_VALUES))

    def dict_get(self, addr: int, key: str) -> int | None:
        """The value of the str key ``key`` in the dict at ``addr``."""
        return self._find(self.dict_items(addr), key)

    def module_attr(self, addr: int, name: str) -> int | None:
        """``module.name`` for the module object at ``addr``."""
        if not self.is_a(addr, self._types.module_type):
            return None
        head = read_at(self._mem, addr + MODULE_DICT, 8)
        return self.dict_get(u64(head, 0), name) if head else None

    def instance_attrs(self, addr: int) -> Iterator[tuple[int, int]]:
        """(name, value) addresses of an instance's attributes (its class has a
        managed dict); nothing for any other object."""
        cls = self.pointer(addr + OB_TYPE) if addr else 0
        flags = self.pointer(cls + TYPE_FLAGS) if self.is_a(cls, self._types.type_type) else 0
        if flags & (MANAGED_DICT | HEAP_TYPE) != MANAGED_DICT | HEAP_TYPE:
            return iter(())
        pre = read_at(self._mem, addr + INSTANCE_VALUES, 16)
        if pre is None:
            return iter(())
        values, own_dict = u64(pre, 0), u64(pre, 8)
        if values:
            return self._entries(self.pointer(cls + HT_CACHED_KEYS), values)
        return self.dict_items(own_dict)

    def attr(self, addr: int, name: str) -> int | None:
        return self._find(self.instance_attrs(addr), name)

    def _find(self, items: Iterator[tuple[int, int]], key: str) -> int | None:
        for key_at, value_at in items:
            if self.string(key_at) == key:
                return value_at
        return None

    def _entries(self, keys: int, values: int) -> Iterator[tuple[int, int]]:
        """The live entries of the keys object at ``keys`` (values from the
        split array at ``values`` when not 0)."""
        head = read_at(self._mem, keys, KEYS_INDICES) if keys else None
        if head is None:
            return
        log2_index, kind = head[KEYS_LOG2_INDEX_BYTES], head[KEYS_KIND]
        count = u64(head, KEYS_NENTRIES)
        if kind not in (KIND_GENERAL, KIND_UNICODE, KIND_SPLIT) or log2_index > MAX_INDEX_LOG2:
            return
        if count > MAX_ENTRIES or (values and kind != KIND_SPLIT):
            return
        size = 24 if kind == KIND_GENERAL else 16
        table = read_at(self._mem, keys + KEYS_INDICES + (1 << log2_index), size * count)
        split = read_at(self._mem, values, 8 * count) if values and count else b""
        if table is None or split is None:
            return
        for i in range(count):
            entry = table[i * size + size - 16 : (i + 1) * size]  # key, value (after a hash)
            key, value = u64(entry, 0), u64(split, 8 * i) if values else u64(entry, 8)
            if key and value:
                yield key, value
