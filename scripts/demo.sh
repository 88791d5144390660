#!/usr/bin/env bash
# Sets everything up, starts the bundled demo workload and opens bpftop on it.
# Quitting bpftop (q) stops the workload.
# Run as root, or as a user with sudo: then it runs itself again with sudo.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        exec sudo -- "$0" "$@"
    fi
    echo "demo: bpftop needs root and there is no sudo here: run $0 as root" >&2
    exit 1
fi
cd "$(dirname "$0")/.."
./scripts/setup.sh
build/workloads/demo &
demo=$!
trap 'kill $demo 2>/dev/null; wait $demo 2>/dev/null || true' EXIT
.venv/bin/bpftop -p "$demo" "$@"
