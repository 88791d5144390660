#!/usr/bin/env bash
# ruff (lint + format check), mypy (strict) and import-linter over the whole project.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# mypy must see the code under its installed names (bpftop.tui, bpftop.bpf, ...),
# which the editable install's import hook provides but mypy cannot follow; a
# copy in that layout gives it them (error paths point into .typecheck/).
shadow=.typecheck/bpftop
rm -rf .typecheck
mkdir -p "$shadow"
for pkg in tui bpf symbols base; do cp -r "$pkg" "$shadow/$pkg"; done
touch "$shadow/__init__.py"
export MYPYPATH=.typecheck
.venv/bin/mypy -p bpftop
.venv/bin/mypy tests bench
# The rooms' import contracts ([tool.importlinter] in pyproject.toml), on the same copy.
(cd .typecheck && PYTHONPATH=. ../.venv/bin/lint-imports --config ../pyproject.toml)
