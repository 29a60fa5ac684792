#!/usr/bin/env bash
# Create (idempotently) a separate venv holding the official a2a-sdk 1.3.0
# server stack for benchmarks/sdk_agent.py, and print its python.
#
#   bash benchmarks/sdk_venv.sh            # venv at /tmp/tnx-sdk-venv
#   SDK_VENV=/some/dir bash benchmarks/sdk_venv.sh
#
# Extras (from a2a_sdk-1.3.0.dist-info/METADATA): "http-server" brings
# starlette + sse-starlette, "sqlite" brings sqlalchemy[asyncio,aiosqlite],
# "grpc" brings grpcio (+ tools, reflection) for sdk_agent.py --grpc-port and
# the gRPC load client, benchmarks/grpc_load.py, which runs in this venv too.
set -euo pipefail

VENV="${SDK_VENV:-/tmp/tnx-sdk-venv}"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    echo "creating venv at $VENV" >&2
    "$PY" -m venv "$VENV"
fi

REQS=(
    "a2a-sdk[http-server,sqlite,grpc]==1.3.0"
    uvicorn
    httptools
    uvloop
    httpx
)

# Skip pip when everything is already importable at the pinned SDK version.
if "$VENV/bin/python" - <<'PYCHECK' 2>/dev/null; then
import importlib.metadata as md
import a2a, starlette, sse_starlette, sqlalchemy, aiosqlite, uvicorn, httptools, uvloop, httpx  # noqa: F401
import grpc, a2a.types.a2a_pb2_grpc  # noqa: F401
assert md.version("a2a-sdk") == "1.3.0"
PYCHECK
    echo "venv $VENV already complete" >&2
else
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${REQS[@]}" >&2
fi

echo "$VENV/bin/python"
