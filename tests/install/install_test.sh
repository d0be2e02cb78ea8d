#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds
# examples/train_loop.cc against it twice, as a separate CMake project
# (find_package(shardpack), shardpack::shardpack) and with pkg-config
# (shardpack.pc), and runs both on a dataset packed by the installed
# `shardpack`. Also imports the installed Python module when one was built.
#
#   install_test.sh BUILD_DIR SOURCE_DIR MAKE_DEMO_DATA [PYTHON]
set -euo pipefail
build="$1" src="$2" make_demo_data="$3" python="${4:-}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpack-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log"
for f in bin/shardpack bin/sharddump bin/shardbench include/shardpack/reader.h \
         include/shardpack/backends.h; do
  [[ -e "$prefix/$f" ]] || { echo "install_test: $prefix/$f was not installed" >&2; exit 1; }
done

echo "--- CMake package" >&2
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DSHARDPACK_EXAMPLES="$src/examples" > "$tmp/configure.log" ||
  { cat "$tmp/configure.log" >&2; exit 1; }
cmake --build "$tmp/consumer" >&2

"$tmp/consumer/write_backend" "$tmp/lmdb-ds" ||
  { echo "install_test: the installed backends did not write and read an LMDB dataset" >&2; exit 1; }

echo "--- pkg-config" >&2
pc=$(find "$prefix" -name shardpack.pc)
export PKG_CONFIG_PATH="$(dirname "$pc")"
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
c++ -std=c++20 -O1 "$src/examples/train_loop.cc" -o "$tmp/train_loop_pc" \
  $(pkg-config --cflags --libs shardpack)

echo "--- run" >&2
"$make_demo_data" "$tmp/src" --cifar-records 600 --images-per-class 0 > /dev/null
"$prefix/bin/shardpack" cifar "$tmp/src/cifar/data_batch_1.bin" -o "$tmp/ds" -q
for exe in "$tmp/consumer/train_loop" "$tmp/train_loop_pc"; do
  "$exe" "$tmp/ds" --epochs 2 --batch-size 100 --compute-ms 0 --threads 1 | tee "$tmp/out"
  grep -q '^epoch 1: 6 steps' "$tmp/out" ||
    { echo "install_test: $exe did not run 2 epochs of 6 steps" >&2; exit 1; }
  grep -q '^samples 1200,' "$tmp/out" ||
    { echo "install_test: $exe did not deliver 1200 samples" >&2; exit 1; }
done

if [[ -n "$python" ]]; then
  echo "--- Python module" >&2
  package=$(find "$prefix" -name __init__.py -path '*/shardpack/*')
  [[ -n "$package" && -n $(find "$prefix" -name '_shardpack*.so' -path '*/shardpack/*') ]] ||
    { echo "install_test: the Python package was not installed" >&2; exit 1; }
  PYTHONPATH="$(dirname "$(dirname "$package")")" "$python" - "$prefix" "$tmp/ds" <<'PY'
import sys
import shardpack
assert shardpack.__file__.startswith(sys.argv[1]), shardpack.__file__
r = shardpack.Reader(sys.argv[2], batch_size=100, rank=0, world_size=1, copy=True)
assert len(r) == 6 and sum(1 for _ in r) == 6
print("installed module:", shardpack.__file__)
PY
fi
echo "install_test: ok" >&2
