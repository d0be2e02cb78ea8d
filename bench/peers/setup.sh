#!/usr/bin/env bash
# Makes build/venv-peers, the venv of the peer benchmarks (issue 32):
# CPython 3.11 with every peer of bench/peers/requirements.txt pinned
# (scripts/python-env --requirements ... --venv ...: the same checks as
# build/venv-torch, torch 2.13.0's CPU build only), then shardpack's own
# cp311 wheel (scripts/wheel, its CMake build kept in build/peers-wheel)
# installed into it with --no-index --no-deps. Prints the venv's python.
#
#   bench/peers/setup.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=build/venv-peers
scripts/python-env --requirements bench/peers/requirements.txt --venv "$venv" >/dev/null
scripts/wheel --python "$venv/bin/python" --out build/peers-dist --build-dir build/peers-wheel >&2
wheel=$(ls build/peers-dist/shardpack-*-cp311-cp311-linux_x86_64.whl)
"$venv/bin/python" -m pip install --no-input --no-index --no-deps --force-reinstall \
  "$wheel" >"$venv/shardpack-install.log" 2>&1 ||
  { cat "$venv/shardpack-install.log" >&2; echo "setup.sh: installing $wheel failed" >&2; exit 1; }
"$venv/bin/python" -c 'import shardpack' ||
  { echo "setup.sh: $venv cannot import shardpack after installing $wheel" >&2; exit 1; }
echo "$venv/bin/python"
