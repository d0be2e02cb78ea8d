#!/usr/bin/env bash
# The GPU staging benchmark of docs/benchmarks.md ("GPU staging"),
# on a machine with a CUDA GPU and the toolkit at /usr/local/cuda:
#
#   1. builds Release with CUDA (build-bench) and runs the device tests
#      (staging_test: the CUDA copies and the finish kernel against the CPU
#      reference; they skip, and this script stops, without a device);
#   2. runs bench/staging_bench, each figure side by side with its reference,
#      --repeats runs each, medians:
#      copy      the staging copies (cudaMemcpyAsync on the reader's stream,
#                host function and event per batch, 3 device buffers) vs
#                cudaMemcpy of the same bytes from pinned memory; aim >= 0.8;
#      consumer  the reader (224x224x3 uint8, batches of 128, on tmpfs) feeding
#                one fixed-time kernel per batch (5 ms) vs the same kernels
#                alone; GPU wait fraction = 1 - ratio, aim < 0.02.
#
#   bench/run_staging_bench.sh [--dir DIR] [--build-dir DIR] [--repeats N]
#                              [--kernel-us N] [--json] [--no-build]
#
# --no-build runs the binaries already in --build-dir (built on another
# machine with the same toolkit: the device machines have CUDA but not our
# libraries' headers).
#
# --dir defaults to /dev/shm (the reader then maps the shards, so the
# consumer figure measures staging, not the disk).
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
dir=/dev/shm
repeats=5
kernel_us=5000
json=()
build=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --kernel-us) kernel_us="$2"; shift 2 ;;
    --json) json=(--json); shift ;;
    --no-build) build=0; shift ;;
    *) echo "run_staging_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if ((build)); then
  if [[ ! -f "$build_dir/build.ninja" ]]; then
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDPACK_CUDA=ON >&2
  fi
  ninja -C "$build_dir" staging_bench staging_test >&2
fi

# The device tests first: the figures mean nothing if the copies are wrong.
out=$("$build_dir/tests/reader/staging_test" --gtest_filter='*Cuda*' 2>&1) || {
  echo "$out" >&2; exit 1; }
echo "$out" | grep -E '^\[  (PASSED|SKIPPED|FAILED)' >&2
if echo "$out" | grep -q SKIPPED; then
  echo "run_staging_bench: no CUDA device here; nothing to measure" >&2
  exit 1
fi

nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv >&2 || true
mkdir -p "$dir"
"$build_dir/bench/staging_bench" --dir "$dir" --repeats "$repeats" --kernel-us "$kernel_us" \
  "${json[@]}"
