"""The compiled program as data: made once by BCC's compile, kept on disk, loaded without it.

Owns :class:`ProgramImage` (what loading needs of a compile: each function's
instructions, with every map load naming its map by number instead of by a
file descriptor; each map's description; the license), :func:`compile_image`
(BCC's compile, straight through libbcc: nothing is attached or loaded, and
the module and its maps are freed once read), :class:`ImageCache` (images on
disk by a key of everything the compile's output depends on) and
:func:`instantiate`: a ``bcc.BPF`` object made from an image without a compile.
It creates the maps and loads each function from the image when it is first
asked for; BCC's attach calls, tables, perf buffers and cleanup work on it as
they do after a compile, and the kernel verifies every function as usual.

BCC itself has no way to load a program it compiled before, so every launch
used to compile (0.6-1.2 CPU-s and ~100 MB of LLVM); an image loads in
milliseconds. Every run, cold or warm, loads through an image, so the path a
warm start takes is the one every test takes.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes as ct
import functools
import hashlib
import json
import marshal
import os
import platform
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1
DEFAULT_DIR = Path("/var/cache/bpftop/programs")
DIR_ENV = "BPFTOP_PROGRAM_CACHE_DIR"  # empty: keep no images on disk
MAX_IMAGES = 16  # past this many, the least recently written are removed
MAX_IMAGE_BYTES = 16 << 20
# linux/bpf.h map types BCC's table classes are chosen by.
MAP_HASH, MAP_ARRAY, MAP_PROG_ARRAY, MAP_PERF_EVENT_ARRAY = 1, 2, 3, 4
MAP_PERCPU_HASH, MAP_PERCPU_ARRAY, MAP_STACK_TRACE, MAP_LRU_HASH = 5, 6, 7, 9
MAP_RINGBUF = 27
NAMED = (MAP_PERF_EVENT_ARRAY, MAP_RINGBUF)  # their table classes take the map's name
_BPF_DICTS = (  # the dicts bcc.BPF.__init__ (BCC 0.26) starts empty
    "kprobe_fds", "uprobe_fds", "tracepoint_fds", "raw_tracepoint_fds", "kfunc_entry_fds",
    "kfunc_exit_fds", "lsm_fds", "perf_buffers", "open_perf_events", "funcs", "tables",
)  # fmt: skip
BPF_LD_IMM64 = 0x18  # BPF_LD | BPF_IMM | BPF_DW: two instruction slots
BPF_PSEUDO_MAP_FD = 1  # its source register when the immediate is a map fd
INSN = 8


def rewrite_map_loads(code: bytes, new_fd: Callable[[int], int]) -> bytes:
    """``code`` (BPF instructions) with each map load's fd ``f`` made ``new_fd(f)``.
    Raises ValueError for a 64-bit load of anything else than a map fd or a
    plain number (a map value, a BTF object: nothing an image can carry)."""
    out, at = bytearray(code), 0
    while at + INSN <= len(out):
        if out[at] != BPF_LD_IMM64:
            at += INSN
            continue
        source = out[at + 1] >> 4
        if source == BPF_PSEUDO_MAP_FD:
            old = int.from_bytes(out[at + 4 : at + 8], "little", signed=True)
            out[at + 4 : at + 8] = new_fd(old).to_bytes(4, "little", signed=True)
        elif source:
            raise ValueError(f"a 64-bit load of kind {source} at instruction {at // INSN}")
        at += 2 * INSN
    return bytes(out)


@dataclass(frozen=True, slots=True)
class MapSpec:
    """One map as the compile declared it (``key_desc``/``leaf_desc``: BCC's
    JSON type descriptions, from which its tables build their ctypes)."""

    name: bytes
    kind: int
    key_size: int
    leaf_size: int
    max_entries: int
    flags: int
    key_desc: str
    leaf_desc: str


@dataclass(frozen=True, slots=True)
class ProgramImage:
    """A compiled program: ``functions`` by name, their map loads holding the
    map's index in ``maps`` (see :func:`~bpftop.bpf.retarget.rewrite_map_loads`)."""

    functions: Mapping[bytes, bytes]
    maps: tuple[MapSpec, ...]
    license: bytes
    kern_version: int

    def to_bytes(self) -> bytes:
        maps = [
            (
                m.name,
                m.kind,
                m.key_size,
                m.leaf_size,
                m.max_entries,
                m.flags,
                m.key_desc,
                m.leaf_desc,
            )
            for m in self.maps
        ]
        return marshal.dumps(
            (FORMAT_VERSION, dict(self.functions), maps, self.license, self.kern_version)
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> ProgramImage | None:
        """The image ``to_bytes`` wrote; None for anything else (marshal data:
        reading it runs no code)."""
        try:
            version, functions, maps, license, kern_version = marshal.loads(data)
            if version != FORMAT_VERSION:
                return None
            specs = tuple(MapSpec(*m) for m in maps)
            image = cls(functions, specs, license, kern_version)
        except (ValueError, TypeError, EOFError):
            return None
        return image if _well_formed(image) else None


def _well_formed(image: ProgramImage) -> bool:
    fields_ok = all(
        isinstance(m.name, bytes) and isinstance(m.key_desc, str) and isinstance(m.leaf_desc, str)
        and all(isinstance(v, int) for v in (m.kind, m.key_size, m.leaf_size, m.max_entries))
        and isinstance(m.flags, int)
        for m in image.maps
    )  # fmt: skip
    functions_ok = all(
        isinstance(name, bytes) and isinstance(code, bytes) and len(code) % 8 == 0
        for name, code in image.functions.items()
    )
    return fields_ok and functions_ok and isinstance(image.license, bytes)


class _Lib:
    """libbcc's C calls this module makes, declared on a handle of our own."""

    def __init__(self) -> None:
        lib = ct.CDLL("libbcc.so.0", use_errno=True)
        size_t, vp, cp = ct.c_size_t, ct.c_void_p, ct.c_char_p
        self.create_module = _declare(
            lib.bpf_module_create_c_from_string, vp,
            [cp, ct.c_uint, ct.POINTER(cp), ct.c_int, ct.c_bool, cp],
        )  # fmt: skip
        self.destroy_module = _declare(lib.bpf_module_destroy, None, [vp])
        self.num_tables = _declare(lib.bpf_num_tables, size_t, [vp])
        self.num_functions = _declare(lib.bpf_num_functions, size_t, [vp])
        self.function_name = _declare(lib.bpf_function_name, cp, [vp, size_t])
        self.function_start = _declare(lib.bpf_function_start, vp, [vp, cp])
        self.function_size = _declare(lib.bpf_function_size, size_t, [vp, cp])
        self.license = _declare(lib.bpf_module_license, cp, [vp])
        self.kern_version = _declare(lib.bpf_module_kern_version, ct.c_uint, [vp])
        self.table_name = _declare(lib.bpf_table_name, cp, [vp, size_t])
        self.table_fd = _declare(lib.bpf_table_fd_id, ct.c_int, [vp, size_t])
        self.table_ints = {
            field: _declare(getattr(lib, f"bpf_table_{field}_id"), kind, [vp, size_t])
            for field, kind in (
                ("type", ct.c_int), ("key_size", size_t), ("leaf_size", size_t),
                ("max_entries", size_t), ("flags", ct.c_int),
            )
        }  # fmt: skip
        self.table_desc = {
            field: _declare(getattr(lib, f"bpf_table_{field}_desc_id"), cp, [vp, size_t])
            for field in ("key", "leaf")
        }
        self.create_map = _declare(
            lib.bcc_create_map, ct.c_int, [ct.c_int, cp, ct.c_int, ct.c_int, ct.c_int, ct.c_int]
        )
        self.prog_load = _declare(
            lib.bcc_prog_load, ct.c_int,
            [ct.c_int, cp, cp, ct.c_int, cp, ct.c_uint, ct.c_int, cp, ct.c_uint],
        )  # fmt: skip
        self.usdt_genargs = _declare(lib.bcc_usdt_genargs, cp, [ct.POINTER(vp), ct.c_int])


def _declare(function: Any, restype: Any, argtypes: list[Any]) -> Any:
    function.restype, function.argtypes = restype, argtypes
    return function


@functools.cache
def _lib() -> _Lib:
    return _Lib()


def compile_image(text: bytes, cflags: list[str]) -> ProgramImage:
    """Compile ``text`` with BCC (as ``bcc.BPF(text=..., cflags=...)`` does,
    without loading or attaching anything) and read the image out; raises
    OSError when the compile fails (its diagnostics went to fd 2)."""
    lib = _lib()
    args = (ct.c_char_p * len(cflags))(*(flag.encode() for flag in cflags))
    no_contexts = (ct.c_void_p * 0)()
    text = (lib.usdt_genargs(no_contexts, 0) or b"") + text
    module = lib.create_module(text, 0, args, len(cflags), True, None)
    if not module:
        raise OSError(ct.get_errno(), "BCC could not compile the program")
    try:
        return _read_module(lib, module)
    finally:
        lib.destroy_module(module)


def _read_module(lib: _Lib, module: int) -> ProgramImage:
    maps, index_of_fd = [], {}
    for i in range(lib.num_tables(module)):
        ints = {field: int(get(module, i)) for field, get in lib.table_ints.items()}
        descs = {field: (get(module, i) or b"").decode() for field, get in lib.table_desc.items()}
        index_of_fd[lib.table_fd(module, i)] = i
        maps.append(
            MapSpec(lib.table_name(module, i), ints["type"], ints["key_size"], ints["leaf_size"],
                    ints["max_entries"], ints["flags"], descs["key"], descs["leaf"])
        )  # fmt: skip
    functions = {}
    for i in range(lib.num_functions(module)):
        name = lib.function_name(module, i)
        code = ct.string_at(lib.function_start(module, name), lib.function_size(module, name))
        functions[name] = rewrite_map_loads(code, index_of_fd.__getitem__)
    return ProgramImage(functions, tuple(maps), lib.license(module), lib.kern_version(module))


def image_key(text: bytes, cflags: list[str], headers: str) -> str:
    """Everything a compile's output depends on besides BCC's code: the text,
    the flags, the headers it compiles against, BCC's version, the running
    kernel (its tracepoint formats) and the CPU count (perf buffers' size)."""
    bcc_version = _bcc_version()
    parts = [
        str(FORMAT_VERSION), bcc_version, platform.release(), platform.version(),
        str(os.cpu_count()), headers, json.dumps(cflags),
    ]  # fmt: skip
    digest = hashlib.sha256("\0".join(parts).encode() + b"\0" + text)
    return digest.hexdigest()


def _bcc_version() -> str:
    try:
        import bcc

        return str(getattr(bcc, "__version__", "?"))
    except ImportError:
        return "?"


class ImageCache:
    """Program images on disk (root's, not writable by others; links refused)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    @classmethod
    def default(cls) -> ImageCache:
        value = os.environ.get(DIR_ENV)
        return cls(DEFAULT_DIR if value is None else (Path(value) if value else None))

    def read(self, key: str) -> ProgramImage | None:
        if self.folder is None:
            return None
        try:
            fd = os.open(self.folder / f"{key}.image", os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as stream:
            info = os.fstat(stream.fileno())
            if (
                info.st_uid != os.geteuid()
                or info.st_mode & 0o022
                or info.st_size > MAX_IMAGE_BYTES
            ):
                return None
            return ProgramImage.from_bytes(stream.read())

    def write(self, key: str, image: ProgramImage) -> None:
        """Keep ``image`` (atomically); nothing raises, a cache that cannot be
        written is only slower."""
        if self.folder is None:
            return
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o755)
            fd, temp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as stream:
                    stream.write(image.to_bytes())
                os.replace(temp, self.folder / f"{key}.image")
            except OSError:
                os.unlink(temp)
                raise
            self._trim()

    def remove(self, key: str) -> None:
        if self.folder is not None:
            with contextlib.suppress(OSError):
                (self.folder / f"{key}.image").unlink()

    def _trim(self) -> None:
        assert self.folder is not None
        images = sorted(self.folder.glob("*.image"), key=lambda p: p.stat().st_mtime)
        for old in images[:-MAX_IMAGES]:
            with contextlib.suppress(OSError):
                old.unlink()


def instantiate(image: ProgramImage, bcc: Any, detached: tuple[bytes, ...] = ()) -> Any:
    """A ``bcc.BPF`` object of ``image``: its maps created now, its functions
    loaded when asked for; ``tracepoint__CAT__NAME`` functions loaded and
    attached, as BCC does after a compile, but for the ``detached`` tracepoints
    (``CAT:NAME``: loaded only). Raises OSError when a map cannot be created or
    the kernel refuses one of those functions."""
    bpf = _image_class(bcc)(image)
    try:
        for name in image.functions:
            if name.startswith(b"tracepoint__"):
                bpf.load_func(name, bcc.BPF.TRACEPOINT)
                event = name[len(b"tracepoint__") :].replace(b"__", b":")
                if event not in detached:
                    bpf.attach_tracepoint(tp=event, fn_name=name)
    except BaseException:
        bpf.cleanup()
        raise
    return bpf


@functools.cache
def _image_class(bcc: Any) -> type:
    """The ``bcc.BPF`` subclass that loads from an image (made once per bcc module)."""
    table = bcc.table
    classes: dict[int, Callable[..., Any]] = {
        MAP_HASH: table.HashTable, MAP_ARRAY: table.Array, MAP_PROG_ARRAY: table.ProgArray,
        MAP_PERF_EVENT_ARRAY: table.PerfEventArray, MAP_PERCPU_HASH: table.PerCpuHash,
        MAP_PERCPU_ARRAY: table.PerCpuArray, MAP_STACK_TRACE: table.StackTrace,
        MAP_LRU_HASH: table.LruHash, MAP_RINGBUF: table.RingBuf,
    }  # fmt: skip

    class ImageBPF(bcc.BPF):  # type: ignore[misc]
        """BCC's BPF object without its compile: what ``BPF.__init__`` sets,
        maps from the image, functions loaded from it."""

        def __init__(self, image: ProgramImage) -> None:
            for name in _BPF_DICTS:
                setattr(self, name, {})
            self._ringbuf_manager = None
            self.tracefile = None
            self.debug = 0
            self.module = None
            self.image = image
            self.map_fds: list[int] = []
            atexit.register(self.cleanup)
            for spec in image.maps:
                fd = _lib().create_map(
                    spec.kind,
                    spec.name,
                    spec.key_size,
                    spec.leaf_size,
                    spec.max_entries,
                    spec.flags,
                )
                if fd < 0:
                    err = ct.get_errno()
                    self.close()
                    raise OSError(
                        err, f"the kernel refused map {spec.name.decode()}: {os.strerror(err)}"
                    )
                self.map_fds.append(fd)

        def code_of(self, name: bytes) -> bytes:
            """Function ``name``'s instructions with this object's map fds."""
            return rewrite_map_loads(self.image.functions[name], self.map_fds.__getitem__)

        def load_func(
            self, func_name: bytes, prog_type: int, device: Any = None, attach_type: int = -1
        ) -> Any:
            if func_name in self.funcs:
                return self.funcs[func_name]
            if func_name not in self.image.functions:
                raise Exception(f"Unknown program {func_name.decode()}")
            fd = load_code(self, func_name, self.code_of(func_name), prog_type)
            fn = bcc.BPF.Function(self, func_name, fd)
            self.funcs[func_name] = fn
            return fn

        def dump_func(self, func_name: bytes) -> bytes:
            return self.code_of(func_name)

        def get_table(
            self, name: bytes, keytype: Any = None, leaftype: Any = None, reducer: Any = None
        ) -> Any:
            found = [i for i, spec in enumerate(self.image.maps) if spec.name == name]
            if not found:
                raise KeyError(name)
            index = found[0]
            spec = self.image.maps[index]
            key = keytype or _decoded(bcc, spec.key_desc)
            leaf = leaftype or _decoded(bcc, spec.leaf_desc)
            make = classes.get(spec.kind)
            if make is None:
                raise KeyError(name)
            extra = {"reducer": reducer} if spec.kind in (MAP_PERCPU_HASH, MAP_PERCPU_ARRAY) else {}
            args = (self, index, self.map_fds[index], key, leaf)
            made = make(*args, name) if spec.kind in NAMED else make(*args, **extra)
            # Its constructor asked a module for these, and there is none.
            made.ttype, made.flags, made.max_entries = spec.kind, spec.flags, spec.max_entries
            return made

        def close(self) -> None:
            super().close()
            fds, self.map_fds = self.map_fds, []
            for fd in fds:
                os.close(fd)

    return ImageBPF


def _decoded(bcc: Any, desc: str) -> Any:
    """The ctypes type BCC makes of a map's key or leaf description (None: none)."""
    return bcc.BPF._decode_table_type(json.loads(desc)) if desc else None


def load_code(bpf: Any, name: bytes, code: bytes, prog_type: int) -> int:
    """Load ``code`` (instructions with ``bpf``'s map fds) as a program of
    ``prog_type`` named ``name``; its fd. Raises OSError when the kernel
    refuses it (the verifier's log goes to fd 2)."""
    image: ProgramImage = bpf.image
    buffer = ct.create_string_buffer(code, len(code))
    fd = _lib().prog_load(
        prog_type, name, buffer, len(code), image.license, image.kern_version, 0, None, 0
    )
    if fd < 0:
        err = ct.get_errno()
        raise OSError(err, f"the kernel refused {name.decode()}: {os.strerror(err)}")
    return int(fd)
