#!/usr/bin/env bash
# Two builds of shardpack side by side on the same datasets, for a change that
# should move no figure (a refactor): the reader's steady images/s on CIFAR
# (raw, --transform none and cifar-train) and on JPEGs (rrc:224), each run
# alternating between the builds (which goes first alternating too; each run
# long enough, about a second, that a scheduler's hiccup is not the figure),
# median of --repeats, and the ratio
# AFTER / BEFORE.
#
#   bench/run_build_compare.sh BEFORE_BUILD AFTER_BUILD [--repeats N] [--dir DIR] [--keep]
#
# Each BUILD is a Release build folder holding tools/shardpack, tools/shardbench
# and datasets/make_demo_data (e.g. a worktree of the old commit:
#   git worktree add /tmp/old OLD && cmake -S /tmp/old -B /tmp/old/build -G Ninja \
#     -DCMAKE_BUILD_TYPE=Release && ninja -C /tmp/old/build shardpack shardbench make_demo_data).
# The datasets are packed once, by AFTER. The object store's figures have their
# own side-by-side run: bench/remote_bench.py --build-dir BUILD, once per build.
set -euo pipefail

source "$(dirname "$0")/bench_lib.sh"
repeats=5
parse_bench_args "$@"
[[ ${#extra_args[@]} -eq 2 ]] || { echo "usage: $0 BEFORE_BUILD AFTER_BUILD [--repeats N]" >&2; exit 2; }
before="${extra_args[0]}"
after="${extra_args[1]}"
for b in "$before" "$after"; do
  for t in tools/shardpack tools/shardbench datasets/make_demo_data; do
    [[ -x "$b/$t" ]] || { echo "$0: $b/$t is missing" >&2; exit 2; }
  done
  grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$b/CMakeCache.txt" ||
    { echo "$0: $b is not a Release build" >&2; exit 2; }
done

work="$dir/build-compare.$$"
mkdir -p "$work"
[[ -n "${keep:-}" ]] || trap 'rm -rf "$work"' EXIT
"$after/datasets/make_demo_data" "$work/src" --cifar-records 50000 --images-per-class 200 \
  --classes 10 > /dev/null
"$after/tools/shardpack" cifar "$work"/src/cifar/data_batch_*.bin -o "$work/cifar" -q
"$after/tools/shardpack" images "$work/src/images" -o "$work/jpeg" -q

# case NAME DATASET FLAGS...
cases=(
  "cifar-none|$work/cifar|--transform none --epochs 20"
  "cifar-train|$work/cifar|--transform cifar-train --epochs 20"
  "jpeg-rrc224|$work/jpeg|--transform rrc:224 --epochs 2"
)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rate() {  # BUILD DATASET FLAGS... -> steady images/s
  local build="$1" ds="$2"; shift 2
  "$build/tools/shardbench" "$ds" "$@" --json -q |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["steady_images_per_s"])'
}
printf '%-12s %14s %14s %8s\n' case "before img/s" "after img/s" ratio
for c in "${cases[@]}"; do
  IFS='|' read -r name ds flags <<< "$c"
  b=() a=()
  for ((i = 0; i < repeats; i++)); do
    # which build goes first alternates: the second of a pair runs on a
    # warmer machine (page cache, clocks)
    # shellcheck disable=SC2086
    if ((i % 2 == 0)); then
      b+=("$(rate "$before" "$ds" $flags)")
      a+=("$(rate "$after" "$ds" $flags)")
    else
      a+=("$(rate "$after" "$ds" $flags)")
      b+=("$(rate "$before" "$ds" $flags)")
    fi
  done
  mb=$(printf '%s\n' "${b[@]}" | median)
  ma=$(printf '%s\n' "${a[@]}" | median)
  printf '%-12s %14.0f %14.0f %8.3f\n' "$name" "$mb" "$ma" "$(echo "$ma / $mb" | bc -l)"
done
