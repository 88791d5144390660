"""The CPython interpreters the Python tests run: Debian 12's python3.11 on the
host, and python3.13 / python3.14 in the Debian roots scripts/setup.sh builds
under build/roots (trixie, sid), run with chroot: a target in another root, as
in a container, whose files bpftop reads through /proc/PID/root and
/proc/PID/map_files. A missing root fails the test (setup.sh makes them).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOTS = ROOT / "build" / "roots"
COMPLETE = ".bpftop-root-complete"  # setup.sh's mark of a finished root


@dataclass(frozen=True)
class Interpreter:
    """``binary`` as the target sees it; ``root`` None: the host's."""

    version: str
    binary: str
    root: Path | None = None
    name: str = ""

    def _check_root(self) -> Path | None:
        if self.root is not None and not (self.root / COMPLETE).exists():
            pytest.fail(f"{self.root} missing: run ./scripts/setup.sh (it builds the Debian roots)")
        return self.root

    def host_binary(self) -> Path:
        """The interpreter's file as this process sees it."""
        root = self._check_root()
        return Path(self.binary) if root is None else root / self.binary.lstrip("/")

    def path(self, file: Path) -> str:
        """``file`` (from this repository) as the target sees it: copied into
        the root's /tmp/bpftop-tests."""
        if self._check_root() is None:
            return str(file)
        assert self.root is not None
        inside = Path("/tmp/bpftop-tests") / file.name
        (self.root / inside.relative_to("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, self.root / inside.relative_to("/"))
        return str(inside)

    def argv(self, script: Path, *args: str, options: tuple[str, ...] = ()) -> list[str]:
        """The command running ``script`` (copied in if needed) with ``args``;
        ``options`` go to the interpreter (``("-X", "perf")``)."""
        inner = [self.binary, *options, self.path(script), *args]
        return inner if self.root is None else ["chroot", str(self.root), *inner]

    def popen(
        self, script: Path, *args: str, options: tuple[str, ...] = (), **kwargs: object
    ) -> subprocess.Popen[str]:
        argv = self.argv(script, *args, options=options)
        return subprocess.Popen(argv, text=True, **kwargs)  # type: ignore[call-overload, no-any-return]

    def __str__(self) -> str:
        return self.name or f"python{self.version}"


PY311 = Interpreter("3.11", "/usr/bin/python3.11")
PY313 = Interpreter("3.13", "/usr/bin/python3.13", ROOTS / "trixie")
PY314 = Interpreter("3.14", "/usr/bin/python3.14", ROOTS / "sid")
ALL = (PY311, PY313, PY314)
# pyenv's 3.12.1, built from CPython's source (on the build machines): the
# real 3.12 bpftop's 3.12 table was read from (its DWARF) and is tested on.
PYENV312 = Interpreter(
    "3.12", str(Path.home() / ".pyenv/versions/3.12.1/bin/python3.12"), name="pyenv3.12"
)
# pyenv's 3.13.0 (on the build machines): a shared libpython, whose
# thread-local thread state is in its own TLS block (glibc's dtv), not the
# executable's.
PYENV313 = Interpreter(
    "3.13", str(Path.home() / ".pyenv/versions/3.13.0/bin/python3.13"), name="pyenv3.13-shared"
)
