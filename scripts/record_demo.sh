#!/usr/bin/env bash
# Records the bundled demo workload (build/workloads/demo, what scripts/demo.sh opens
# bpftop on) for the screenshots: two 10 s CPU profiles at 99 Hz, one after the
# other, with `bpftop record`. screenshots/demo.speedscope.json is what the
# screenshots show (`bpftop view`); screenshots/demo-before.speedscope.json is the
# baseline of the diff screenshots (`bpftop diff demo-before demo`).
# Run as root, or as a user with sudo: then it runs itself again with sudo.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        exec sudo -- "$0" "$@"
    fi
    echo "record_demo: bpftop needs root and there is no sudo here: run $0 as root" >&2
    exit 1
fi
cd "$(dirname "$0")/.."
./scripts/setup.sh
for name in demo-before demo; do
    build/workloads/demo 60 &
    pid=$!
    .venv/bin/bpftop record -p "$pid" -d 10 -o "screenshots/$name.speedscope.json"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
done
