#!/usr/bin/env bash
# ruff (lint + format check) and mypy (strict) over the whole project.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# mypy sees the code under its installed names (bpftop.tui, bpftop.bpf, ...):
# a tree of symlinks gives it that layout without moving the sources.
shadow=build/typecheck/bpftop
mkdir -p "$shadow"
for pkg in tui bpf symbols; do ln -sfn "$PWD/$pkg" "$shadow/$pkg"; done
touch "$shadow/__init__.py"
MYPYPATH=build/typecheck .venv/bin/mypy -p bpftop.tui -p bpftop.bpf -p bpftop.symbols
.venv/bin/mypy tests bench
