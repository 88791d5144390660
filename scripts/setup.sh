#!/usr/bin/env bash
# Sets up everything bpftop needs on a Debian 12 machine, idempotently:
#   - Debian packages: BCC (python3-bpfcc, bpfcc-tools), kernel headers, venv, gcc,
#     g++ and <sys/sdt.h> (systemtap-sdt-dev) for the USDT workloads, and
#     Debian's python3.11 (built with USDT probes) for the python: USDT tests
#   - a venv in .venv made from /usr/bin/python3 with system site-packages
#     (BCC's Python bindings come only from Debian), with bpftop installed
#     editable plus its dev tools
#   - the C workloads (demo and tests) under build/workloads
#   - py-spy (a dev extra) and perf write the other tools' profiles the format
#     tests read; Go (golang-go) builds a runtime/pprof CPU profile there too
#   - the real consumers the export tests check against: Go's pprof
#     (golang-go), headless Chromium, and speedscope's npm package (its
#     file-format schema) under build/node
#   - two Debian root filesystems for the Python 3.13 and 3.14 tests, whose
#     interpreters the tests run with chroot (which is also the container
#     test): build/roots/trixie (python3.13) and build/roots/sid (python3.14)
# A second run with nothing to do takes a couple of seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }

APT_PACKAGES=(python3-bpfcc bpfcc-tools libbpfcc linux-headers-amd64 python3-venv gcc make libc6-dev binutils g++ lld systemtap-sdt-dev python3.11 libc6-dbg linux-perf golang-go chromium bpftrace debootstrap sqlite3)
# npm may come from another Node.js package than Debian's: only install Debian's if there is none.
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(npm)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        say "error: installing Debian packages needs root and there is no sudo here: run $0 as root"
        exit 1
    fi
}

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The venv: rebuilt only when pyproject.toml changes.
stamp=.venv/.bpftop-setup-stamp
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    if [ ! -x .venv/bin/python ]; then
        say "creating .venv (system site-packages, for BCC)"
        /usr/bin/python3 -m venv --system-site-packages .venv
    fi
    say "installing bpftop and its dev tools into .venv"
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
    echo "$want" > "$stamp"
fi

# bpftop's bytecode, as pip writes an installed package's: an editable install
# leaves it to the first launch, or to none where PYTHONDONTWRITEBYTECODE is
# set; compiling the sources at each launch costs its start-up ~0.14 CPU-s
# (bench/bytecode.py). Only missing or stale files are compiled.
.venv/bin/python -m compileall -q -j0 base bpf symbols tui >/dev/null

# Make sure BCC imports from the venv; say why not in one line if it does not.
if ! .venv/bin/python -c 'import bcc' 2>/dev/null; then
    say "error: 'import bcc' fails in .venv; python3-bpfcc is missing or broken"
    exit 1
fi

# Merge the fallback kernel headers now (once; cached), not at first launch.
if [ "$(id -u)" -eq 0 ]; then
    .venv/bin/python -c 'from bpftop.bpf.environment import choose_headers; choose_headers()'
fi

make -s -C tests/workloads OUT="$PWD/build/workloads"

# speedscope's own file-format schema, for the speedscope export test.
SPEEDSCOPE_VERSION=1.25.0
schema=build/node/node_modules/speedscope/dist/release/file-format-schema.json
if [ ! -f "$schema" ] || ! grep -qs "\"version\": \"$SPEEDSCOPE_VERSION\"" build/node/node_modules/speedscope/package.json; then
    say "installing speedscope $SPEEDSCOPE_VERSION (npm) into build/node"
    mkdir -p build/node
    npm install --prefix build/node --no-audit --no-fund --silent "speedscope@$SPEEDSCOPE_VERSION" >/dev/null
fi

# A Debian root with one interpreter, made by debootstrap into a scratch
# directory and renamed into place only once complete: an interrupted or failed
# run leaves no root a later run takes as done (the scratch is removed first).
# $4..: apt options for use inside the root (written to its apt.conf.d).
build_root() {
    local name=$1 suite=$2 python=$3
    shift 3
    local dir=build/roots/$name scratch=build/roots/.$name.partial
    [ -f "$dir/.bpftop-root-complete" ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        say "skipping build/roots/$name: debootstrap and chroot need root"
        return 0
    fi
    mkdir -p build/roots
    # debootstrap mounts /proc and /sys inside while it works: never delete
    # through a mount left by an interrupted run.
    local mnt old
    for old in "$scratch" "$dir"; do  # a scratch left over; a root without its mark
        while read -r mnt; do umount -l "$mnt" || true; done < <(awk -v p="$PWD/$old/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r)
        rm -rf --one-file-system "$old"
    done
    say "building build/roots/$name: Debian $suite with $python (debootstrap, a few minutes)"
    if ! debootstrap --variant=minbase --include="$python" "$suite" "$scratch" http://deb.debian.org/debian >"build/roots/.$name.log" 2>&1; then
        say "error: debootstrap $suite failed; see build/roots/.$name.log (rerun $0 to retry)"
        exit 1
    fi
    if [ "$#" -gt 0 ]; then
        printf '%s\n' "$@" >"$scratch/etc/apt/apt.conf.d/99bpftop"
    fi
    chroot "$scratch" apt-get clean
    chroot "$scratch" "/usr/bin/$python" -c 'import sys; print(sys.version)' >/dev/null
    touch "$scratch/.bpftop-root-complete"
    mv "$scratch" "$dir"
}
build_root trixie trixie python3.13
# sid's Release file carries a validity date this machine's clock may be past.
build_root sid sid python3.14 'Acquire::Check-Valid-Until "false";'
