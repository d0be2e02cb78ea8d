#!/usr/bin/env bash
# Merge of many parts: packs one CIFAR-10 file of RECORDS records
# as PARTS parts (`--part I/PARTS`, two packs at a time), then times
#   merge --check   reading and checking every part's manifest and shard sizes;
#   merge -o OUT    the same checks, then one hard link per shard and the
#                   merged manifest (OUT removed between runs),
# REPEATS runs each, with the parts named in a shuffled order; medians. Also
# prints how the time grows: the same merge of PARTS/10 parts.
#
#   bench/run_merge_bench.sh [--dir DIR] [--build-dir DIR] [--repeats N]
#                            [--records N] [--parts N] [--shardpack PATH]
#
# --shardpack uses a built binary instead of a Release build in --build-dir.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
repeats=5
records=10000
parts=1000
shardpack=""
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --parts) parts="$2"; shift 2 ;;
    --shardpack) shardpack="$2"; shift 2 ;;
    *) unknown_arg "$1" ;;
  esac
done
if [[ -z $shardpack ]]; then
  release_build shardpack make_demo_data
  shardpack=$build_dir/tools/shardpack
fi
make_demo_data=$(dirname "$shardpack")/../datasets/make_demo_data

work=$dir/shardpack-merge-bench
rm -rf "$work"
mkdir -p "$work"
trap '[[ -n ${keep:-} ]] || rm -rf "$work"' EXIT
"$make_demo_data" "$work/in" --images-per-class 0 --cifar-records "$records" >/dev/null
input=$work/in/cifar/data_batch_1.bin

pack_parts() {  # N DIR
  local n=$1 out=$2
  mkdir -p "$out"
  seq 1 "$n" | xargs -P 2 -I{} "$shardpack" cifar "$input" -o "$out/part-{}" \
      --part "{}/$n" --seed 1 -q
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# time_merge N DIR MODE: the median wall time (seconds) of REPEATS merges.
time_merge() {
  local n=$1 parts_dir=$2 mode=$3 i start end
  for ((i = 0; i < repeats; i++)); do
    mapfile -t named < <(printf '%s\n' "$parts_dir"/part-* | shuf)
    rm -rf "$work/merged"
    sync
    start=$(date +%s.%N)
    if [[ $mode == check ]]; then
      "$shardpack" merge --check "${named[@]}" 2>/dev/null
    else
      "$shardpack" merge "${named[@]}" -o "$work/merged" 2>/dev/null
    fi
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
  done | median
}

small=$((parts / 10))
echo "packing $records records as $parts parts and as $small parts ..." >&2
pack_parts "$parts" "$work/parts"
pack_parts "$small" "$work/small"
shards=$(find "$work/parts" -name '*.shard' | wc -l)

printf '| merge of | shards | --check | merge -o | per part |\n| --- | ---: | ---: | ---: | ---: |\n'
for entry in "$small:$work/small" "$parts:$work/parts"; do
  n=${entry%%:*} parts_dir=${entry#*:}
  check=$(time_merge "$n" "$parts_dir" check)
  merge=$(time_merge "$n" "$parts_dir" merge)
  count=$(find "$parts_dir" -name '*.shard' | wc -l)
  printf '| %d parts | %d | %.3f s | %.3f s | %.2f ms |\n' "$n" "$count" "$check" "$merge" \
      "$(echo "$merge * 1000 / $n" | bc -l)"
done
links=$(stat -c %h "$work/merged/shard-00000.shard")
echo "(last merge: $shards shards, hard links per shard file: $links)" >&2
