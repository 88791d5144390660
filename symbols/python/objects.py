"""Reading CPython objects (dicts, str, int, instance attributes) from /proc/PID/mem.

Owns :class:`ObjectReader`: every object it reads is checked against the
type it must have (``ob_type`` equal to the process's ``&PyDict_Type``,
``&PyUnicode_Type``, ``&PyLong_Type``, ``&PyModule_Type``; a class's own
type ``&PyType_Type``), and every size against a bound, because the objects
can change or be freed while they are read (nothing stops the process).
What cannot be read is None, never an exception.

Layouts (x86-64), from the process's
:class:`~bpftop.symbols.python.layout.PythonLayout` where they differ by
version. The same 3.11 to 3.14 (offsetof() against Debian's 3.11.2 headers,
the DWARF of 3.12.1, 3.13 and 3.14 read in live processes): ``PyDictKeysObject``
dk_log2_index_bytes +9, dk_kind +10 (0 general: entries {hash, key, value},
24 bytes; 1 unicode and 2 split: {key, value}, 16 bytes), dk_nentries +24,
dk_indices +32, the entries after ``1 << dk_log2_index_bytes`` index bytes;
a split dict's values are ``ma_values[i]`` for entry i (3.13+: after an
8-byte header). ``PyModuleObject.md_dict`` +16. Ints: 30-bit digits after
ob_size (3.11) or lv_tag (3.12+: digit count << 3, sign 2 for negative).
An instance of a class with ``Py_TPFLAGS_MANAGED_DICT`` keeps its attributes
outside its header, with the keys in the class's ``ht_cached_keys``: 3.11,
the values array at -32 or, once a dict was made for it, that dict at -24;
3.12, at -24 the values (their address - 1, so odd) or the dict; 3.13+, the
dict at -24 if made, else with ``Py_TPFLAGS_INLINE_VALUES`` the values right
after the object's basic size (header: capacity, size, embedded, valid).
"""

from __future__ import annotations

from collections.abc import Iterator

from bpftop.symbols.python.code import read_at, read_string, u64
from bpftop.symbols.python.layout import LAYOUT_311, PythonLayout
from bpftop.symbols.python.runtime import ObjectTypes

OB_TYPE = 8
KEYS_LOG2_INDEX_BYTES, KEYS_KIND, KEYS_NENTRIES, KEYS_INDICES = 9, 10, 24, 32
KIND_GENERAL, KIND_UNICODE, KIND_SPLIT = 0, 1, 2
MODULE_DICT = 16
DIGIT_BITS = 30
TYPE_BASICSIZE, TYPE_FLAGS = 32, 168
INLINE_VALUES, MANAGED_DICT, HEAP_TYPE = 1 << 2, 1 << 4, 1 << 9
INSTANCE_VALUES, INSTANCE_DICT = -32, -24
MAX_BASICSIZE = 1 << 16
MAX_ENTRIES = 1 << 16  # a dict bigger than this is not read (sys.modules: hundreds)
MAX_INDEX_LOG2 = 20


class ObjectReader:
    """Typed reads of one process's objects (``mem``: its /proc/PID/mem, open)."""

    def __init__(self, mem: object, types: ObjectTypes, layout: PythonLayout = LAYOUT_311) -> None:
        self._mem = mem
        self._types = types
        self._layout = layout

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
        return read_string(self._mem, addr, self._layout)

    def integer(self, addr: int) -> int | None:
        """A small int (at most three digits, 90 bits)."""
        if not self.is_a(addr, self._types.int_type):
            return None
        layout = self._layout
        head = read_at(self._mem, addr + layout.long_size, 8)
        size = int.from_bytes(head, "little", signed=not layout.long_tagged) if head else 1 << 8
        if layout.long_tagged:  # lv_tag: digits << 3 | sign (0 positive, 1 zero, 2 negative)
            size = -(size >> 3) if size & 3 == 2 else size >> 3
        if abs(size) > 3:
            return None
        digits = read_at(self._mem, addr + layout.long_digits, 4 * abs(size)) if size else b""
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
        layout = self._layout
        head = read_at(self._mem, addr, max(layout.dict_keys, layout.dict_values) + 8)
        if head is None:
            return iter(())
        values = u64(head, layout.dict_values)
        return self._entries(
            u64(head, layout.dict_keys), values + layout.values_header * bool(values)
        )

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
        values, own_dict = self._instance(addr, cls, flags, u64(pre, 0), u64(pre, 8))
        if values:
            return self._entries(self.pointer(cls + self._layout.ht_cached_keys), values)
        return self.dict_items(own_dict)

    def _instance(self, addr: int, cls: int, flags: int, before: int, last: int) -> tuple[int, int]:
        """(values array, dict) of an instance, one of them 0, from the two
        words before its header (``before`` at -32, ``last`` at -24)."""
        scheme = self._layout.instances
        if scheme == 11:
            return before, last
        if scheme == 12:
            return (last + 1, 0) if last & 1 else (0, last)
        if last or not flags & INLINE_VALUES:
            return 0, last
        size = self.pointer(cls + TYPE_BASICSIZE)
        header = read_at(self._mem, addr + size, 8) if 0 < size < MAX_BASICSIZE else None
        if header is None or not header[3]:  # not valid (moved to a dict being made)
            return 0, 0
        return addr + size + 8, 0

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
