#!/bin/sh
# Elastic resume: Restore time on 8,000,000 tiny records, against
# reading the same batches from the start. docs/benchmarks.md has the figures.
#   bench/run_restore_bench.sh [BUILD_DIR] [WORK_DIR]
set -eu
build=${1:-build}
work=${2:-${TMPDIR:-/tmp}/shardpack-restore-bench}
cmake --build "$build" --target restore_bench -j2 >/dev/null
mkdir -p "$work"
"$build/bench/restore_bench" "$work/tiny-8m" --records 8000000 --batch-size 256 \
  --from 4 --to 3 --batches 2000
