#!/usr/bin/env bash
# Sets everything up and runs the whole test suite: static checks, unit and TUI
# tests, and the real-kernel eBPF tests (as root; these never skip silently).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
if [ "$(id -u)" -ne 0 ]; then
    echo "test: the eBPF tests need root; run: sudo $0" >&2
    exit 1
fi
./scripts/lint.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
