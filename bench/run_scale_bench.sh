#!/usr/bin/env bash
# Cost growth at scale on one machine (docs/benchmarks.md "At scale on one
# machine"). Makes, one at a time:
#   - CIFAR-10 binaries of 10^5, 10^6 and 10^7 class-sorted records (10^7 is
#     30.7 GB, more than a 24 GiB machine's RAM), packed by `shardpack cifar`;
#   - an ImageFolder of 200,000 ImageNet-like JPEGs (~108 KB each, 1,000
#     classes), packed by `shardpack images`;
#   - 10^8 records of 64 bytes (8x8x1), written straight into shards
#     (scale_bench gen: the index, plan and reader paths with tiny records);
# and measures for each
#   - the pack's time and peak RSS (/usr/bin/time -v: it counts the mapped
#     input's pages) beside `dd bs=4M conv=fsync` of the CIFAR input, or
#     `tar cf` + `sync` of the image folder, caches dropped before each;
#   - Reader::Open; the first batch after Open, warm and cold;
#   - the reader's peak RSS beside the budget it reports (shardbench);
#   - warm and cold streaming beside raw reads of the same files in the same
#     process (--compare-raw; cold: --io direct --drop-caches against O_DIRECT
#     reads); JPEG records are decoded (rrc:224, 20 s), so their row says
#     images/s instead;
#   - the index's and the epoch plan's bytes per record and the plan's build
#     time (scale_bench plan, rank 0 of 1 and of 8);
#   - sharddump verify beside cat of the same files (both warm);
# and prints a cost-growth table: each metric at each size and its growth
# exponent over the CIFAR sizes (log of the metric's ratio over log of the
# record count's ratio, smallest to largest: 1 is linear).
#
#   bench/run_scale_bench.sh [DIR] [--max-gb N] [--sizes "100000 1000000 10000000"]
#                            [--images N] [--tiny N] [--build-dir DIR] [--out FILE] [--keep]
#
# DIR (or --dir): where the data goes (default: $TMPDIR, /work/tmp or /tmp).
#   Each dataset and its input are removed after their measurements unless
#   --keep.
# --max-gb N: the most disk the script may use at once (default: 90% of what
#   is free under DIR). A CIFAR size whose input and pack do not fit is written
#   straight into shards with smaller square images instead (no pack figures;
#   the table says so); the image folder gets fewer files (it says so).
# --images N: JPEG files in the image folder (default 200000; 0 skips it).
# --tiny N: records of 64 bytes (default 100000000; 0 skips them).
# --build-dir: a build with scale_bench, shardpack, shardbench and sharddump
#   (default build-bench, a Release build configured here when absent).
# Dropping caches before the pack and its reference needs root (it is skipped
# otherwise, and the table says "warm"); the reader's cold runs drop the
# files' pages with posix_fadvise (no root needed). The load average is
# printed with each row.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
max_gb=""
sizes="100000 1000000 10000000"
images=200000
tiny=100000000
out=""
keep=0
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --max-gb) max_gb="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --images) images="$2"; shift 2 ;;
    --tiny) tiny="$2"; shift 2 ;;
    -*) unknown_arg "$1" ;;
    *) dir="$1"; shift ;;
  esac
done
count() { [[ "$2" =~ ^[0-9]+$ ]] || { echo "run_scale_bench.sh: $1 must be a count, not '$2'" >&2; exit 2; }; }
count --images "$images"
count --tiny "$tiny"
for n in $sizes; do
  count --sizes "$n"
  (( n > 0 )) || { echo "run_scale_bench.sh: --sizes: a dataset of 0 records measures nothing" >&2; exit 2; }
done
work="$dir/scale-bench"
mkdir -p "$work"
if [[ -z "$max_gb" ]]; then
  max_gb=$(( $(df -B1 --output=avail "$work" | tail -1) * 9 / 10 / 1000000000 ))
fi
count --max-gb "$max_gb"
(( max_gb > 0 )) || { echo "run_scale_bench.sh: no disk space under $work" >&2; exit 2; }

if [[ "$build_dir" == "$root/build-bench" ]]; then
  release_build scale_bench shardpack shardbench sharddump
fi
sb="$build_dir/bench/scale_bench"
pack="$build_dir/tools/shardpack"
bench="$build_dir/tools/shardbench"
dump="$build_dir/tools/sharddump"
for t in "$sb" "$pack" "$bench" "$dump"; do
  [[ -x "$t" ]] || { echo "run_scale_bench.sh: no $t" >&2; exit 2; }
done
out="${out:-$dir/scale-bench-table.md}"
results="$work/results.jsonl"
: > "$results"
trap '[[ $keep == 1 ]] || rm -rf "$work/data" "$work/in" "$work/ref"' EXIT
ram=$(free -b | awk '/Mem:/{print $2}')
max_bytes=$((max_gb * 1000000000))

load() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }
since() { printf "%.4f" "$(echo "$(now) - $1" | bc)"; }
cold=1
drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || cold=0; }
peak_mb() { awk -F': ' '/Maximum resident/{printf "%.1f", $2 / 1024}' "$1"; }

# timed_pack REF_SECONDS REF_NAME COMMAND...: times the pack command (caches
# dropped first) under /usr/bin/time -v; sets pack_json beside the reference.
pack_json='{}'
timed_pack() {
  local ref_s=$1 ref_name=$2 t0 s
  shift 2
  drop
  t0=$(now)
  /usr/bin/time -v -o "$work/pack.time" "$@"
  s=$(since "$t0")
  pack_json=$(printf '{"pack_s": %s, "pack_rss_mb": %s, "ref_s": %s, "ref": "%s", "cold": %d, "input_bytes": %s}' \
    "$s" "$(peak_mb "$work/pack.time")" "$ref_s" "$ref_name" "$cold" "$input_bytes")
  echo "  pack: $s s, peak RSS $(peak_mb "$work/pack.time") MB; $ref_name: $ref_s s (load $(load))" >&2
}

# read_metrics NAME RECORDS SHAPE TRANSFORM: the reader's measurements on
# $work/data; appends one JSON object (with $pack_json) to $results.
read_metrics() {
  local name=$1 n=$2 shape=$3 transform=$4 data="$work/data"
  local bytes length=(--epochs 1) warm cold_run plan1 plan8 verify_s cat_s load_warm load_cold t0
  bytes=$(du -sb "$data" | cut -f1)
  [[ "$transform" == none ]] || length=(--seconds 20)
  echo "[$name] $n records, $shape, $bytes bytes ($(echo "$bytes / $ram" | bc -l | cut -c1-4)x RAM), load $(load)" >&2
  cat "$data"/*.shard > /dev/null
  load_warm=$(load)
  warm=$("$bench" "$data" --transform "$transform" "${length[@]}" --compare-raw --json -q --threads 2)
  load_cold=$(load)
  cold_run=$("$bench" "$data" --transform "$transform" "${length[@]}" --compare-raw --json -q \
             --threads 2 --io direct --drop-caches)
  plan1=$("$sb" plan "$data" --world-size 1 --epochs 2)
  plan8=$("$sb" plan "$data" --world-size 8 --epochs 1)
  cat "$data"/*.shard > /dev/null
  t0=$(now); "$dump" verify "$data" > /dev/null; verify_s=$(since "$t0")
  t0=$(now); cat "$data"/*.shard "$data"/manifest.json > /dev/null; cat_s=$(since "$t0")
  /usr/bin/python3 - "$name" "$n" "$shape" "$bytes" "$ram" "$verify_s" "$cat_s" "$load_warm" \
      "$load_cold" "$warm" "$cold_run" "$plan1" "$plan8" "$pack_json" >> "$results" <<'EOF'
import json, sys
a = sys.argv[1:]
print(json.dumps({"name": a[0], "records": int(a[1]), "shape": a[2], "bytes": int(a[3]),
                  "ram": int(a[4]), "verify_s": float(a[5]), "cat_s": float(a[6]),
                  "load_warm": float(a[7]), "load_cold": float(a[8]), "warm": json.loads(a[9]),
                  "cold": json.loads(a[10]), "plan1": json.loads(a[11]),
                  "plan8": json.loads(a[12]), "pack": json.loads(a[13])}))
EOF
  [[ $keep == 1 ]] || rm -rf "$data"
  pack_json='{}'
}

# A CIFAR size: packed from a CIFAR-10 binary when input and pack fit,
# else written straight into shards with the largest square images that fit.
cifar_size() {
  local n=$1 t0 dd_s
  rm -rf "$work/data" "$work/in" "$work/ref"
  input_bytes=$((n * 3073))
  if (( input_bytes * 2 + input_bytes / 20 <= max_bytes )); then
    mkdir -p "$work/in" "$work/ref"
    "$sb" cifar "$work/in/data_batch_1.bin" --records "$n"
    drop
    t0=$(now)
    dd if="$work/in/data_batch_1.bin" of="$work/ref/copy.bin" bs=4M conv=fsync status=none
    dd_s=$(since "$t0")
    rm -rf "$work/ref"
    timed_pack "$dd_s" "dd conv=fsync" "$pack" cifar "$work/in/data_batch_1.bin" --cifar 10 \
      -o "$work/data" -q
    rm -rf "$work/in"
    read_metrics "cifar-$n" "$n" 32x32x3 none
    return
  fi
  local side=32
  while (( side > 1 && n * (side * side * 3 + 24) > max_bytes )); do side=$((side - 1)); done
  echo "[cifar-$n] input and pack would take $((input_bytes * 2 / 1000000000)) GB, more than --max-gb $max_gb: written straight into shards as ${side}x${side}x3, no pack figures" >&2
  "$sb" gen "$work/data" --records "$n" --height "$side" --width "$side" --channels 3
  read_metrics "cifar-$n" "$n" "${side}x${side}x3" none
}

# The image folder: as many files as the disk holds for the folder and its
# tar at once (each ~108 KB), at most $images.
image_folder() {
  local files=$images per=112000 t0 tar_s
  if (( files * per * 2 > max_bytes )); then
    files=$((max_bytes / per / 2))
    echo "[images] the disk holds $files files and their tar, not $images: measuring $files" >&2
  fi
  rm -rf "$work/data" "$work/in" "$work/ref"
  mkdir -p "$work/in" "$work/ref"
  "$sb" images "$work/in/train" --files "$files" --classes 1000
  input_bytes=$(du -sb "$work/in/train" | cut -f1)
  drop
  t0=$(now)
  tar cf "$work/ref/train.tar" -C "$work/in" train && sync -f "$work/ref/train.tar"
  tar_s=$(since "$t0")
  rm -rf "$work/ref"
  timed_pack "$tar_s" "tar cf + sync" "$pack" images "$work/in/train" -o "$work/data" -q
  rm -rf "$work/in"
  read_metrics "images-$files" "$files" "JPEG ~108 KB" rrc:224
}

for n in $sizes; do cifar_size "$n"; done
(( images == 0 )) || image_folder
if (( tiny > 0 )); then
  if (( tiny * 110 > max_bytes )); then
    echo "run_scale_bench.sh: --tiny $tiny needs ~$((tiny * 110 / 1000000000 + 1)) GB, more than --max-gb $max_gb: skipped" >&2
  else
    rm -rf "$work/data"
    "$sb" gen "$work/data" --records "$tiny" --height 8 --width 8 --channels 1
    read_metrics "tiny-$tiny" "$tiny" 8x8x1 none
  fi
fi

/usr/bin/python3 - "$results" "$out" <<'EOF'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def metrics(r):
    w, c, p1, p8, pk = r["warm"], r["cold"], r["plan1"], r["plan8"], r["pack"]
    raw = r["name"].startswith(("cifar", "tiny"))  # JPEG rows decode: no raw ratio
    m = {
        "pack (s)": pk.get("pack_s", 0),
        "reference (s): dd or tar + sync": pk.get("ref_s", 0),
        "pack speed / reference": pk["ref_s"] / pk["pack_s"] if pk else 0,
        "pack peak RSS (MB)": pk.get("pack_rss_mb", 0),
        "Reader::Open (s)": w["open_s"],
        "first batch warm (s)": w["first_batch_s"],
        "first batch cold (s)": c["first_batch_s"],
        "reader peak RSS (MB)": w["peak_rss_mb"],
        "reported budget (MB)": w["memory_budget_mb"],
        "RSS - budget (MB)": w["peak_rss_mb"] - w["memory_budget_mb"],
        "index (MB)": w["index_mb"],
        "plans, peak (MB)": w["plan_mb"],
        "warm stream / raw": w["raw_ratio"] if raw else 0,
        "cold stream / O_DIRECT raw": c["raw_ratio"] if raw else 0,
        "warm images/s": w["images_per_s"],
        "cold images/s": c["images_per_s"],
        "plan build, 1 rank (s)": p1["plans"][0]["build_s"],
        "plan B/record, 1 rank": p1["plans"][0]["bytes_per_record"],
        "plan build peak B/record": p1["plans"][1]["build_bytes_per_record"],
        "plan measured peak B/record": p1["plans"][1]["measured_build_peak_per_record"],
        "plan B/record, rank 0 of 8": p8["plans"][0]["bytes_per_record"],
        "index B/record": p1["index_bytes_per_record"],
        "sharddump verify (s)": r["verify_s"],
        "cat (s)": r["cat_s"],
        "verify / cat": r["verify_s"] / r["cat_s"] if r["cat_s"] > 0 else 0,
    }
    return m
ms = [metrics(r) for r in rows]
def title(r):
    big = " > RAM" if r["bytes"] > r["ram"] else ""
    return f'{r["records"]:,} ({r["shape"]}, {r["bytes"]/1e9:.2f} GB{big})'
head = "| metric | " + " | ".join(title(r) for r in rows) + " | growth exponent (CIFAR sizes) |"
lines = [head, "|" + "---|" * (len(rows) + 2)]
lines.append("| load average (warm, cold) | " + " | ".join(f'{r["load_warm"]:.2f}, {r["load_cold"]:.2f}' for r in rows) + " | |")
lines.append("| pack input cold (caches dropped) | " + " | ".join(("yes" if r["pack"].get("cold") else "warm") if r["pack"] else "no pack" for r in rows) + " | |")
cifar = [i for i, r in enumerate(rows) if r["name"].startswith("cifar")]
ratios = ("/", "B/record", "RSS - ", "images/s")
for k in ms[0]:
    vals = [m[k] for m in ms]
    exp = ""
    if len(cifar) >= 2:
        a, b = cifar[0], cifar[-1]
        if vals[a] > 0 and vals[b] > 0 and not any(t in k for t in ratios):
            exp = f"{math.log(vals[b] / vals[a]) / math.log(rows[b]['records'] / rows[a]['records']):.2f}"
    lines.append(f"| {k} | " + " | ".join(f"{v:.4g}" if v else "-" for v in vals) + f" | {exp} |")
if not any(r["bytes"] > r["ram"] for r in rows):
    lines.append("\nNo dataset was larger than RAM: the cold figures are the only out-of-memory ones.")
text = "\n".join(lines) + "\n"
open(sys.argv[2], "w").write(text)
print(text)
EOF
echo "run_scale_bench.sh: table in $out, raw results in $results" >&2
