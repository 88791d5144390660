#!/usr/bin/env bash
# Sets everything up and runs the whole test suite: static checks, unit and TUI
# tests, and the real-kernel eBPF tests (as root; these never skip silently).
# Run as root, or as a user with sudo: then it runs itself again with sudo.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        exec sudo -- "$0" "$@"
    fi
    echo "test: the eBPF tests need root and there is no sudo here: run $0 as root" >&2
    exit 1
fi
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/lint.sh
exec .venv/bin/python -m pytest -q -rs -p no:cacheprovider "$@"
