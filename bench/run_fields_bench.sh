#!/usr/bin/env bash
# The fields benchmark of docs/benchmarks.md ("Fields"), side by side in one
# run, each case --repeats times (interleaved), medians reported:
#
#   ImageNet-like JPEGs (make_demo_data: 500x375, about 108 KB, 10 classes x
#   --images-per-class), packed as they are (`shardpack images --mode
#   passthrough`), then copied by `make_bench_dataset --from` three ways, in
#   the same order and blocks:
#   (ref)     the image and its label: a classic dataset, as the packer writes it
#   (caption) the image ("photo"), the label and a caption of 60 bytes
#   (boxes)   the image, the label and boxes, f32 [n, 4], 4 a record on average
#   shardbench --transform rrc:224 on each, batch 128, the same threads and
#   cores (taskset), the consumer reading every field's bytes as it reads the
#   images. Aims: caption >= 0.95x ref; boxes adds < 3% (>= 0.97x ref), as
#   the median of the ratios within a round (the three cases run back to
#   back); the table has the ratio of the medians and the CPU time too.
#
#   bench/run_fields_bench.sh [--dir DIR] [--build-dir DIR] [--repeats N]
#                             [--images-per-class N] [--threads N] [--epochs N]
#                             [--out FILE] [--keep]
#
# --build-dir: a Release build (configured here if absent; another build
#   type is refused). Default build-bench under the repository root.
# --threads: reader threads, pinned to cores 0..N-1 (default 2).
# --out: where the markdown table is written (also printed). Default
#   DIR/fields-bench/table.md.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
repeats=5
per_class=200
threads=2
epochs=3
out=""
keep=0
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --images-per-class) per_class="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    *) unknown_arg "$1" ;;
  esac
done

work="$dir/fields-bench"
out="${out:-$work/table.md}"
cleanup() {
  if [[ $keep -eq 0 ]]; then rm -rf "$work/demo" "$work/packed" "$work/ref" "$work/caption" \
    "$work/boxes" "$work/results"; fi
}
trap cleanup EXIT
log() { echo "run_fields_bench.sh: $*" >&2; }

release_build shardbench shardpack make_demo_data make_bench_dataset
shardbench="$build_dir/tools/shardbench"
make="$build_dir/bench/make_bench_dataset"

# ---- Data --------------------------------------------------------------------
mkdir -p "$work/results"
rm -f "$work/results/"*.json
rm -rf "$work/demo" "$work/packed" "$work/ref" "$work/caption" "$work/boxes"
"$build_dir/datasets/make_demo_data" "$work/demo" --classes 10 --images-per-class "$per_class" \
  --cifar-records 0 >&2
"$build_dir/tools/shardpack" images "$work/demo/images" --mode passthrough -o "$work/packed" -q
"$make" "$work/ref" --from "$work/packed"
"$make" "$work/caption" --from "$work/packed" --caption-bytes 60
"$make" "$work/boxes" --from "$work/packed" --boxes 4

# ---- Runs --------------------------------------------------------------------
cores=$(seq -s, 0 $((threads - 1)))
load() { cut -d' ' -f1 /proc/loadavg; }
echo "$(load)" > "$work/results/load_start"
order=(ref caption boxes)
for ((i = 1; i <= repeats; i++)); do
  log "round $i of $repeats (load $(load))"
  # Each round starts with another case, so that none always runs first.
  for k in 0 1 2; do
    name=${order[$(((i + k) % 3))]}
    echo "+ taskset -c $cores $shardbench $work/$name --transform rrc:224 ..." >&2
    taskset -c "$cores" "$shardbench" "$work/$name" --transform rrc:224 --batch-size 128 \
      --threads "$threads" --epochs "$epochs" --warmup 5 --json -q \
      > "$work/results/$name.$i.json"
  done
done
echo "$(load)" > "$work/results/load_end"

# ---- Table -------------------------------------------------------------------
/usr/bin/python3 - "$work" "$repeats" "$threads" "$epochs" > "$out" <<'EOF'
import glob, json, os, statistics, sys

work, repeats, threads, epochs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def runs(case):
    return [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "results", f"{case}.*.json")))]

def med(case, key):
    return statistics.median(r[key] for r in runs(case))

def size(case):
    return sum(os.path.getsize(os.path.join(work, case, f)) for f in os.listdir(os.path.join(work, case)))

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
           "unknown")
loads = [float(open(os.path.join(work, "results", f)).read()) for f in ("load_start", "load_end")]
ref = runs("ref")[0]
print(f"CPU: {cpu}, {os.cpu_count()} cores; {ref['records']} JPEGs (make_demo_data, 500x375), "
      f"shardbench --transform rrc:224 --batch-size 128 --threads {threads} --epochs {epochs} "
      f"--warmup 5 on cores 0-{int(threads) - 1}; {repeats} runs a case, interleaved, medians; "
      f"load average {loads[0]:.2f} before, {loads[1]:.2f} after.")
print()
# A round runs the three cases back to back: the ratio within a round sees
# the same load, so its median moves less than the ratio of medians.
def round_ratio(case, key):
    return statistics.median(c[key] / r[key] for c, r in zip(runs(case), runs("ref")))

print("| dataset | bytes | images/s (after 5 batches) | CPU us/image | ratio to ref | "
      "ratio within rounds | CPU ratio within rounds | aim |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
base = med("ref", "steady_images_per_s")
aims = {"ref": "-", "caption": ">= 0.95x", "boxes": ">= 0.97x (adds < 3%)"}
limits = {"caption": 0.95, "boxes": 0.97}
names = {"ref": "ref: image + label (classic)", "caption": "caption: + 60-byte caption",
         "boxes": "boxes: + boxes f32 [n, 4], 4 a record"}
for case in ("ref", "caption", "boxes"):
    v = med(case, "steady_images_per_s")
    within = round_ratio(case, "steady_images_per_s")
    aim = aims[case]
    if case in limits:
        aim += ": met" if within >= limits[case] else ": NOT met"
    print(f"| {names[case]} | {size(case) / 1e6:.1f} MB | {v:,.0f} | "
          f"{med(case, 'steady_cpu_us_per_image'):.0f} | {v / base:.3f}x | {within:.3f}x | "
          f"{round_ratio(case, 'steady_cpu_us_per_image'):.3f}x | {aim} |")
print()
print("Per round (images/s, steady): " + "; ".join(
    f"{case} " + ", ".join(f"{r['steady_images_per_s']:,.0f}" for r in runs(case))
    for case in ("ref", "caption", "boxes")))
EOF
cat "$out"
log "table written to $out"
