#!/usr/bin/env bash
# The cost of a mixture (docs/benchmarks.md, "Mixtures"): shardbench on one
# dataset of N CIFAR-shaped records against a mixture of two datasets that
# hold the same N records split in two (--source A --source B, repeat 1
# each), side by side in one run, interleaved (the first of the pair
# alternates from round to round), --transform cifar-train, batch 512,
# --threads 1 on core 0 and --threads 2 on cores 0,1, medians of --repeats
# rounds. Aim (issue 34): the mixture at >= 0.98 of the one dataset's
# steady images/s.
#
#   bench/run_mix_bench.sh [--dir DIR] [--build-dir DIR] [--repeats N]
#                          [--records N] [--epochs E] [--out FILE] [--keep]
#
# --dir: where the CIFAR binaries and the three datasets go (~320 MB),
#   removed at the end unless --keep. Default: $TMPDIR if set, else
#   /work/tmp when /work exists, else /tmp.
# --build-dir: a Release build (configured here if absent). Default
#   build-bench under the repository root.
# --epochs: epochs a run streams (default 50).
# --out: where the markdown table is written (also printed). Default
#   DIR/mix-bench/table.md.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
repeats=5
records=50000
epochs=50
out=""
keep=0
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --epochs) epochs="$2"; shift 2 ;;
    *) unknown_arg "$1" ;;
  esac
done

work="$dir/mix-bench"
out="${out:-$work/table.md}"
cleanup() { if [[ $keep -eq 0 ]]; then rm -rf "$work/src" "$work/one" "$work/a" "$work/b"; fi; }
trap cleanup EXIT
log() { echo "run_mix_bench.sh: $*" >&2; }

release_build shardbench shardpack make_demo_data
shardbench="$build_dir/tools/shardbench"
shardpack="$build_dir/tools/shardpack"
make_demo_data="$build_dir/datasets/make_demo_data"

# ---- Data: N records in one dataset, and the same N split into two ----------
mkdir -p "$work/results"
rm -f "$work/results/"*.json
"$make_demo_data" "$work/src" --cifar-records "$records" --images-per-class 0 >&2
bin="$work/src/cifar/data_batch_1.bin"
half=$((records / 2))
head -c $((half * 3073)) "$bin" > "$work/src/a.bin"
tail -c +$((half * 3073 + 1)) "$bin" > "$work/src/b.bin"
"$shardpack" cifar "$bin" -o "$work/one" --overwrite -q
"$shardpack" cifar "$work/src/a.bin" --cifar 10 -o "$work/a" --overwrite -q
"$shardpack" cifar "$work/src/b.bin" --cifar 10 -o "$work/b" --overwrite -q

# ---- Runs ----------------------------------------------------------------------
load() { cut -d' ' -f1 /proc/loadavg; }
run() {  # run NAME CORES ARGS...: JSON of one run into results/NAME.K.json
  local name="$1" cores="$2"; shift 2
  echo "+ taskset -c $cores shardbench $*" >&2
  taskset -c "$cores" "$shardbench" "$@" > "$work/results/$name.$i.json"
}
common=(--batch-size 512 --json -q --transform cifar-train --epochs "$epochs" --warmup 5)
one=("$work/one")
mix=(--source "$work/a" --source "$work/b")
echo "$(load)" > "$work/results/load_start"
for ((i = 1; i <= repeats; i++)); do
  log "round $i of $repeats (load $(load))"
  for t in 1 2; do
    cores=0; [[ $t -eq 2 ]] && cores=0,1
    if ((i % 2)); then
      run "one-t$t" "$cores" "${one[@]}" "${common[@]}" --threads "$t"
      run "mix-t$t" "$cores" "${mix[@]}" "${common[@]}" --threads "$t"
    else
      run "mix-t$t" "$cores" "${mix[@]}" "${common[@]}" --threads "$t"
      run "one-t$t" "$cores" "${one[@]}" "${common[@]}" --threads "$t"
    fi
  done
done
echo "$(load)" > "$work/results/load_end"

# ---- Table -------------------------------------------------------------------
/usr/bin/python3 - "$work/results" "$repeats" "$records" > "$out" <<'EOF'
import json, statistics, sys
res, repeats, records = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def runs(name):
    return [json.load(open(f"{res}/{name}.{i}.json")) for i in range(1, repeats + 1)]
def med(xs):
    return statistics.median(xs)
loads = [open(f"{res}/load_{w}").read().strip() for w in ("start", "end")]
print(f"{records} CIFAR records, cifar-train, batch 512, {repeats} interleaved rounds, medians "
      f"(fastest-slowest); load average {loads[0]} at the start, {loads[1]} at the end\n")
print("| threads | figure | one dataset | mixture of two halves | mixture / one |")
print("| --- | --- | ---: | ---: | ---: |")
for t in (1, 2):
    one, mix = runs(f"one-t{t}"), runs(f"mix-t{t}")
    for key, label, unit, fmt in (
            ("steady_images_per_s", "images/s after 5 batches", "", "{:,.0f}"),
            ("steady_cpu_us_per_image", "CPU per image after 5 batches", " us", "{:.3f}"),
            ("images_per_s", "images/s, whole run", "", "{:,.0f}")):
        o, m = [r[key] for r in one], [r[key] for r in mix]
        per_round = [b / a for a, b in zip(o, m)]
        cell = lambda xs: (fmt.format(med(xs)) + unit + f" ({fmt.format(max(xs) if unit == '' else min(xs))}"
                           f"-{fmt.format(min(xs) if unit == '' else max(xs))})")
        print(f"| {t} | {label} | {cell(o)} | {cell(m)} | **{med(m) / med(o):.3f}** "
              f"(per round {min(per_round):.3f}-{max(per_round):.3f}) |")
    print(f"| {t} | samples a run | {one[0]['samples']:,} | {mix[0]['samples']:,} "
          f"(sources {[s['samples'] for s in mix[0]['sources']]}) | |")
EOF
cat "$out"
