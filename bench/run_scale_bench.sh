#!/usr/bin/env bash
# The reader at scale (issue 16, docs/benchmarks.md "The reader at scale"):
# for datasets of 10^5, 10^6 and 10^7 CIFAR-shaped raw records (written by
# scale_bench gen, straight into shards: packing is measured apart), and of
# 10^8 records of 64 bytes, measures
#   - Reader::Open time; the first batch after Open, warm and cold;
#   - the reader's peak RSS beside the budget it reports (shardbench);
#   - warm and cold streaming (--transform none, one epoch) beside raw reads
#     of the same files in the same process (--compare-raw; cold: --io direct
#     --drop-caches against O_DIRECT reads);
#   - the index's and the epoch plan's bytes per record, the plan's build time
#     (scale_bench plan, rank 0 of 1 and of 8);
#   - sharddump verify beside cat of the same files (both warm);
# and prints a cost-growth table: each metric at each size and its growth
# exponent (log of the metric's ratio over log of the record count's ratio,
# from the smallest size to the largest: 1 is linear).
#
#   bench/run_scale_bench.sh [DIR] [--max-gb N] [--sizes "100000 1000000 10000000"]
#                            [--tiny N] [--build-dir DIR] [--out FILE] [--keep]
#
# DIR (or --dir): where the datasets go, one at a time (each is removed after
#   its measurements unless --keep). Default: $TMPDIR, /work/tmp or /tmp.
# --max-gb N: the most one dataset may take (default 12). A size whose
#   CIFAR-shaped records (3,072 bytes of pixels) would take more gets smaller
#   square images, and the table says so: the record-count costs (Open, plan,
#   index, first batch) do not depend on the image size.
# --tiny N: records of 64 bytes (8x8x1) for the 10^8 case (default 100000000;
#   0 skips it).
# --build-dir: a build with scale_bench, shardbench and sharddump (default
#   build-bench, a Release build configured here when absent).
# Cold runs drop the files' pages with posix_fadvise (shardbench
# --drop-caches), no root needed. The load average is printed with each row.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
max_gb=12
sizes="100000 1000000 10000000"
tiny=100000000
out=""
keep=0
args=()
for a in "$@"; do args+=("$a"); done
set -- "${args[@]+"${args[@]}"}"
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --max-gb) max_gb="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --tiny) tiny="$2"; shift 2 ;;
    -*) unknown_arg "$1" ;;
    *) dir="$1"; shift ;;
  esac
done
[[ "$max_gb" =~ ^[0-9]+$ && "$max_gb" -gt 0 ]] || { echo "run_scale_bench.sh: --max-gb must be a positive integer" >&2; exit 2; }
[[ "$tiny" =~ ^[0-9]+$ ]] || { echo "run_scale_bench.sh: --tiny must be a count" >&2; exit 2; }
for n in $sizes; do
  [[ "$n" =~ ^[0-9]+$ && "$n" -gt 0 ]] || { echo "run_scale_bench.sh: --sizes: $n is not a count" >&2; exit 2; }
done

if [[ "$build_dir" == "$root/build-bench" ]]; then
  release_build scale_bench shardbench sharddump
fi
for t in scale_bench shardbench sharddump; do
  [[ -x "$build_dir/bench/$t" || -x "$build_dir/tools/$t" ]] || { echo "run_scale_bench.sh: no $t in $build_dir" >&2; exit 2; }
done
sb="$build_dir/bench/scale_bench"
bench="$build_dir/tools/shardbench"
dump="$build_dir/tools/sharddump"
work="$dir/scale-bench"
out="${out:-$dir/scale-bench-table.md}"
mkdir -p "$work"
results="$work/results.jsonl"
: > "$results"
trap '[[ $keep == 1 ]] || rm -rf "$work/data"' EXIT

load() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }

# measure NAME RECORDS H W C: writes, measures and removes one dataset;
# appends one JSON object to $results.
measure() {
  local name=$1 n=$2 h=$3 w=$4 c=$5 data="$work/data"
  rm -rf "$data"
  local t0 t1
  t0=$(now)
  "$sb" gen "$data" --records "$n" --height "$h" --width "$w" --channels "$c" 2>/dev/null
  t1=$(now)
  local gen_s bytes
  gen_s=$(echo "$t1 - $t0" | bc)
  bytes=$(du -sb "$data" | cut -f1)
  echo "[$name] $n records ${h}x${w}x${c}: $bytes bytes written in $gen_s s (load $(load))" >&2

  # Warm: the files read once first (cat), then the reader and the raw reads.
  cat "$data"/*.shard > /dev/null
  local warm cold plan1 plan8 verify_s cat_s load_warm load_cold
  load_warm=$(load)
  warm=$("$bench" "$data" --transform none --epochs 1 --compare-raw --json -q --threads 2)
  load_cold=$(load)
  cold=$("$bench" "$data" --transform none --epochs 1 --compare-raw --json -q --threads 2 \
         --io direct --drop-caches)
  plan1=$("$sb" plan "$data" --world-size 1 --epochs 2)
  plan8=$("$sb" plan "$data" --world-size 8 --epochs 1)
  cat "$data"/*.shard > /dev/null
  t0=$(now); "$dump" verify "$data" > /dev/null; t1=$(now)
  verify_s=$(echo "$t1 - $t0" | bc)
  t0=$(now); cat "$data"/*.shard "$data"/manifest.json > /dev/null; t1=$(now)
  cat_s=$(echo "$t1 - $t0" | bc)
  /usr/bin/python3 - "$name" "$n" "$h" "$w" "$c" "$bytes" "$gen_s" "$verify_s" "$cat_s" \
      "$load_warm" "$load_cold" "$warm" "$cold" "$plan1" "$plan8" >> "$results" <<'EOF'
import json, sys
a = sys.argv[1:]
print(json.dumps({"name": a[0], "records": int(a[1]), "shape": f"{a[2]}x{a[3]}x{a[4]}",
                  "bytes": int(a[5]), "gen_s": float(a[6]), "verify_s": float(a[7]),
                  "cat_s": float(a[8]), "load_warm": float(a[9]), "load_cold": float(a[10]),
                  "warm": json.loads(a[11]), "cold": json.loads(a[12]),
                  "plan1": json.loads(a[13]), "plan8": json.loads(a[14])}))
EOF
  [[ $keep == 1 ]] || rm -rf "$data"
}

max_bytes=$((max_gb * 1000000000))
for n in $sizes; do
  # CIFAR-shaped when it fits, else the largest square RGB image that does
  # (a record also takes its key, label and offset: ~24 bytes).
  side=32
  while (( side > 1 && n * (side * side * 3 + 24) > max_bytes )); do side=$((side - 1)); done
  measure "cifar-$n" "$n" "$side" "$side" 3
done
if (( tiny > 0 )); then
  (( tiny * 110 <= max_bytes )) || { echo "run_scale_bench.sh: --tiny $tiny needs ~$((tiny * 110 / 1000000000 + 1)) GB, more than --max-gb $max_gb" >&2; exit 2; }
  measure "tiny-$tiny" "$tiny" 8 8 1
fi

/usr/bin/python3 - "$results" "$out" <<'EOF'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def metrics(r):
    w, c, p1, p8 = r["warm"], r["cold"], r["plan1"], r["plan8"]
    return {
        "Reader::Open (s)": w["open_s"],
        "first batch warm (s)": w["first_batch_s"],
        "first batch cold (s)": c["first_batch_s"],
        "reader peak RSS (MB)": w["peak_rss_mb"],
        "reported budget (MB)": w["memory_budget_mb"],
        "RSS - budget (MB)": w["peak_rss_mb"] - w["memory_budget_mb"],
        "index (MB)": w["index_mb"],
        "plans, peak (MB)": w["plan_mb"],
        "warm stream / raw": w["raw_ratio"],
        "cold stream / O_DIRECT raw": c["raw_ratio"],
        "warm epoch (s)": w["seconds"],
        "cold epoch (s)": c["seconds"],
        "plan build, 1 rank (s)": p1["plans"][0]["build_s"],
        "plan B/record, 1 rank": p1["plans"][0]["bytes_per_record"],
        "plan build peak B/record": p1["plans"][0]["build_bytes_per_record"],
        "plan measured peak B/record": p1["plans"][1]["measured_build_peak_per_record"],
        "plan B/record, rank 0 of 8": p8["plans"][0]["bytes_per_record"],
        "index B/record": p1["index_bytes_per_record"],
        "sharddump verify (s)": r["verify_s"],
        "cat (s)": r["cat_s"],
        "verify / cat": r["verify_s"] / r["cat_s"] if r["cat_s"] > 0 else 0,
    }
ms = [metrics(r) for r in rows]
head = "| metric | " + " | ".join(f'{r["records"]:,} ({r["shape"]}, {r["bytes"]/1e9:.2f} GB)' for r in rows) + " | growth exponent |"
lines = [head, "|" + "---|" * (len(rows) + 2)]
lines.append("| load average (warm, cold) | " + " | ".join(f'{r["load_warm"]:.2f}, {r["load_cold"]:.2f}' for r in rows) + " | |")
cifar = [i for i, r in enumerate(rows) if r["name"].startswith("cifar")]
for k in ms[0]:
    vals = [m[k] for m in ms]
    exp = ""
    if len(cifar) >= 2:
        a, b = cifar[0], cifar[-1]
        if vals[a] > 0 and vals[b] > 0 and "/" not in k and "B/record" not in k and "RSS - " not in k:
            exp = f"{math.log(vals[b] / vals[a]) / math.log(rows[b]['records'] / rows[a]['records']):.2f}"
    lines.append(f"| {k} | " + " | ".join(f"{v:.4g}" for v in vals) + f" | {exp} |")
text = "\n".join(lines) + "\n"
open(sys.argv[2], "w").write(text)
print(text)
EOF
echo "run_scale_bench.sh: table in $out, raw results in $results" >&2
