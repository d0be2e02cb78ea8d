#!/usr/bin/env bash
# shardpack's LMDB and HDF5 readers against python's lmdb and h5py reading the
# same files, side by side. Prints the exact commands, one JSON line per run,
# and a table of medians and ratios.
#
#   bench/run_backend_bench.sh [--dir DIR] [--build-dir DIR] [--records N] [--rounds R]
#
# Packs N synthetic CIFAR-10 records (default 50000, random pixels) into
# shards of 10000 records, converts them to LMDB and to HDF5, then for each
# backend runs bench/backend_bench and bench/peers/backend_read.py
# alternately R times (default 3; each run reports its own median of 5 warm
# passes) on one pinned core. The figure is the median over the rounds, and
# the ratio is python's time over shardpack's.
# --dir: where the datasets go (default as the other bench scripts); needs
#   about 4 x N x 3 KB free. --build-dir: default build-bench (Release);
#   a RelWithDebInfo build is accepted and named in the output.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
records=50000
rounds=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --records) records="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "run_backend_bench.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for module in lmdb h5py; do
  if ! /usr/bin/python3 -c "import $module" 2>/dev/null; then
    echo "run_backend_bench.sh: /usr/bin/python3 lacks $module (scripts/setup installs it)" >&2
    exit 2
  fi
done

if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build_dir/CMakeCache.txt")
if [[ $build_type != Release && $build_type != RelWithDebInfo ]]; then
  echo "run_backend_bench.sh: $build_dir is a $build_type build; pass --build-dir" >&2
  exit 2
fi
ninja -C "$build_dir" shardpack backend_bench >&2

work="$dir/backend-bench.$$"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
# CIFAR-10 binary records: a label byte (< 10) and 3072 random pixel bytes.
/usr/bin/python3 - "$work/data_batch_1.bin" "$records" <<'PY'
import numpy as np, sys
n = int(sys.argv[2])
rng = np.random.default_rng(1)
rec = rng.integers(0, 256, size=(n, 3073), dtype=np.uint8)
rec[:, 0] %= 10
rec.tofile(sys.argv[1])
PY
"$build_dir/tools/shardpack" cifar "$work/data_batch_1.bin" -o "$work/shard" --cifar 10 \
    --shard-records 10000 -q
for f in lmdb hdf5; do
  "$build_dir/tools/shardpack" convert "$work/shard" -o "$work/$f" --format "$f" -q
done

pin=()
if command -v taskset >/dev/null; then pin=(taskset -c 0); fi
echo "# $build_type build, $(nproc) cpus, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)" >&2
results="$work/results.jsonl"
for f in lmdb hdf5; do
  ours=("${pin[@]}" "$build_dir/bench/backend_bench" "$work/$f" --repeats 5)
  peer=("${pin[@]}" /usr/bin/python3 "$root/bench/peers/backend_read.py" "$work/$f" --repeats 5)
  echo "+ ${ours[*]}" >&2
  echo "+ ${peer[*]}" >&2
  for ((r = 0; r < rounds; r++)); do
    "${ours[@]}" | tee -a "$results"
    "${peer[@]}" | tee -a "$results"
  done
done

/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
print(f"{'backend':8} {'reader':16} {'records/s':>12} {'MB/s':>8} {'python time / ours':>20}")
for backend in ("lmdb", "hdf5"):
    med = {}
    for who in ("shardpack", "python"):
        rs = [r for r in runs if r["backend"] == backend and r["reader"].startswith(who)]
        med[who] = statistics.median(r["seconds"] for r in rs)
        r0 = rs[0]
        print(f"{backend:8} {r0['reader']:16} {r0['records'] / med[who]:12.0f} "
              f"{r0['bytes'] / med[who] / 1e6:8.0f} "
              f"{med[who] / med['shardpack']:20.2f}")
PY
