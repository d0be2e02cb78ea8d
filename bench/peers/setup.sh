#!/usr/bin/env bash
# Makes build/venv-peers, the venv of the peer benchmarks (issue 32):
# 1. the Debian packages the peers need (scripts/setup --peers);
# 2. CPython 3.11 with every peer of bench/peers/requirements.txt pinned
#    (scripts/python-env --requirements ... --venv ...: the same checks as
#    build/venv-torch, torch 2.13.0's CPU build only);
# 3. FFCV, built from its sdist (bench/peers/requirements-ffcv.txt), with
#    the two of its dependencies that PyPI has only as sdists (assertpy,
#    fastargs: pure Python); everything else only as wheels;
# 4. shardpack's own cp311 manylinux wheel (scripts/wheel, its CMake build
#    kept in build/wheel-cp311-*), installed with --no-index --no-deps.
# Prints the venv's python.
#
#   bench/peers/setup.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=build/venv-peers
scripts/setup --peers
scripts/python-env --requirements bench/peers/requirements.txt --venv "$venv" >/dev/null

ffcv=bench/peers/requirements-ffcv.txt
if ! cmp -s "$ffcv" "$venv/requirements-ffcv.txt"; then
  echo "setup.sh: building and installing $ffcv (ffcv from its sdist)" >&2
  "$venv/bin/python" -m pip install --no-input --only-binary=:all: --no-binary=ffcv,assertpy,fastargs \
    --constraint bench/peers/requirements.txt --constraint "$ffcv" -r "$ffcv" \
    >"$venv/ffcv-install.log" 2>&1 ||
    { tail -20 "$venv/ffcv-install.log" >&2
      echo "setup.sh: installing $ffcv failed; the whole log: $venv/ffcv-install.log" >&2; exit 1; }
  "$venv/bin/python" -m pip check >&2
  cp "$ffcv" "$venv/requirements-ffcv.txt"
fi
wheel=$(scripts/wheel --python "$venv/bin/python" --out build/peers-dist)
"$venv/bin/python" -m pip install --no-input --no-index --no-deps --force-reinstall \
  "$wheel" >"$venv/shardpack-install.log" 2>&1 ||
  { cat "$venv/shardpack-install.log" >&2; echo "setup.sh: installing $wheel failed" >&2; exit 1; }
"$venv/bin/python" -c 'import shardpack' ||
  { echo "setup.sh: $venv cannot import shardpack after installing $wheel" >&2; exit 1; }
echo "$venv/bin/python"
