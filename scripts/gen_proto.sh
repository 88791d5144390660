#!/usr/bin/env bash
# Regenerates tui/formats/pprof/profile_pb2.py and .pyi from our profile.proto
# with grpcio-tools' protoc (a dev dependency). The generated files are kept
# in the repository so an installed bpftop needs no protoc; a test checks
# that they match the .proto.
set -euo pipefail
cd "$(dirname "$0")/../tui/formats/pprof"
"${PYTHON:-../../../.venv/bin/python}" -m grpc_tools.protoc -I. --python_out=. --pyi_out=. profile.proto
