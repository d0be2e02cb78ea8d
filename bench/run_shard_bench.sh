#!/usr/bin/env bash
# Builds shard_bench in Release (if needed) and runs it with the settings used
# for docs/benchmarks.md. Prints the exact command before running it.
#
#   bench/run_shard_bench.sh [--dir DIR] [--build-dir DIR] [-- extra shard_bench flags]
#
# --dir: where the shard and dd's file are written; must be on the disk you
#   want measured (not /dev/shm). Default: $TMPDIR if set, else /work/tmp when
#   /work exists, else /tmp. The benchmark makes and removes its own
#   subdirectory there and needs about 1 GiB free (2 x --size-mib).
# --build-dir: default build-bench under the repository root.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run_shard_bench.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$dir"

release_build shard_bench

# The settings behind the figures in docs/benchmarks.md.
cmd=("$build_dir/bench/shard_bench" --dir "$dir" --size-mib 512 --repeats 5 --block-kib 4096
     --zstd "${extra[@]}")
echo "+ ${cmd[*]}" >&2
exec "${cmd[@]}"
