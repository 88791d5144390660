#!/bin/sh
# bind_mounted.sh SRC DST COMMAND [ARGS...]
# Runs COMMAND in a mount namespace of its own where the file SRC is
# bind-mounted over DST: COMMAND sees another file at DST than everyone else
# (as a container sees its own libraries at the host's paths). Needs root.
set -e
src=$1 dst=$2
shift 2
exec unshare --mount --propagation private sh -c 'mount --bind "$0" "$1" && shift && exec "$@"' "$src" "$dst" "$@"
