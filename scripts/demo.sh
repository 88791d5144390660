#!/usr/bin/env bash
# Sets everything up, starts the bundled demo workload and opens bpftop on it.
# Quitting bpftop (q) stops the workload.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
build/workloads/demo &
demo=$!
trap 'kill $demo 2>/dev/null; wait $demo 2>/dev/null || true' EXIT
if [ "$(id -u)" -eq 0 ]; then
    .venv/bin/bpftop -p "$demo" "$@"
else
    sudo .venv/bin/bpftop -p "$demo" "$@"
fi
