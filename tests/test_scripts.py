"""README's two commands (``./scripts/demo.sh``, ``./scripts/test.sh``) work as root
without sudo (a fresh container has none) and as a user with sudo: a script not run
as root runs itself again with sudo before doing anything, or says to run it as
root when there is no sudo."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ("demo.sh", "test.sh")


def readme_commands() -> list[str]:
    """The commands of README's "Two commands" block, comments cut."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Two commands\n.*?```sh\n(.*?)```", text, re.S)
    assert block is not None
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_runs_the_scripts_without_sudo() -> None:
    commands = readme_commands()
    assert [c.split()[0] for c in commands] == [f"./scripts/{s}" for s in SCRIPTS]
    for script in SCRIPTS:
        assert os.access(ROOT / "scripts" / script, os.X_OK)


@pytest.fixture
def bin_dir() -> Iterator[Path]:
    """A PATH with only bash, id and env, readable by an unprivileged user."""
    folder = Path(tempfile.mkdtemp(prefix="bpftop-scripts-"))
    folder.chmod(0o755)
    for tool in ("bash", "id", "env"):
        found = shutil.which(tool)
        assert found is not None
        (folder / tool).symlink_to(found)
    yield folder
    shutil.rmtree(folder)


def run_unprivileged(script: str, path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (with two arguments) as an unprivileged user and PATH=``path``."""
    drop = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv is not None
        drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    command = [*drop, "/usr/bin/env", "-i", f"PATH={path}", str(ROOT / "scripts" / script)]
    return subprocess.run(
        [*command, "-x", "a b"], capture_output=True, text=True, timeout=30, check=False
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_user_with_sudo_runs_the_script_again_with_sudo(script: str, bin_dir: Path) -> None:
    sudo = bin_dir / "sudo"
    sudo.write_text('#!/usr/bin/env bash\nprintf "<%s>" "$@"\n')
    sudo.chmod(0o755)
    done = run_unprivileged(script, bin_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"<--><{ROOT / 'scripts' / script}><-x><a b>"
    assert done.stderr == ""  # nothing else ran first (no set-up as the user)


@pytest.mark.parametrize("script", SCRIPTS)
def test_without_root_or_sudo_the_script_says_to_run_it_as_root(script: str, bin_dir: Path) -> None:
    done = run_unprivileged(script, bin_dir)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.endswith(f"there is no sudo here: run {ROOT / 'scripts' / script} as root\n")
    assert done.stderr.count("\n") == 1


def test_setup_run_again_has_nothing_to_do_and_costs_little() -> None:
    """README: run again with nothing to do, set-up only checks (well under a CPU-second)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [str(ROOT / "scripts" / "setup.sh")], capture_output=True, text=True, timeout=300
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == "", "nothing installed, built or said"
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu_s < 1.0, f"{cpu_s:.2f} CPU-s"
