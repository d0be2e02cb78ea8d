#!/usr/bin/env bash
# Packing from WebDataset tars beside packing from a folder, the same JPEGs,
# side by side in one run (docs/benchmarks.md, "Packing from WebDataset
# tars"; aim: `shardpack webdataset` at >= 0.8x the images/s of
# `shardpack images`):
#
#   ImageNet-like JPEGs (make_demo_data: 500x375, about 108 KB, 10 classes x
#   --images-per-class), as an ImageFolder and as WebDataset tars of the same
#   files (Python's tarfile, as WebDataset's ShardWriter writes them: KEY.jpg
#   then KEY.cls, the label in decimal, --per-tar samples a tar);
#   (folder) shardpack images FOLDER -o OUT --threads T   (passthrough)
#   (tars)   shardpack webdataset TAR... -o OUT           (a jpeg and a label field)
#   Each round runs both, which goes first alternating; before each run its
#   output is removed and its inputs are made resident (every file read;
#   --cold: dropped from the page cache instead, `dd iflag=nocache`, no root
#   needed). Both write to the same directory and fsync their shards. The
#   time is the process's wall time; images/s = images / time. The table has
#   the medians and the median of the ratios within a round.
#
#   bench/run_wds_pack_bench.sh [--dir DIR] [--build-dir DIR] [--repeats N]
#                               [--images-per-class N] [--per-tar N]
#                               [--threads T] [--cold] [--out FILE] [--keep]
#
# Defaults: 9 rounds, 300 images a class (3,000 images, 324 MB), 1,000
# samples a tar, --threads 2 for `shardpack images` (`shardpack webdataset`
# reads its tars in order on one thread and has no --threads).
# --build-dir: a Release build (configured here if absent). Default build-bench.
# --out: the markdown table (also printed); default DIR/wds-pack-bench/table.md.
# Needs about 3x the JPEGs' bytes under DIR (removed at the end unless --keep).
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
repeats=9
per_class=300
per_tar=1000
threads=2
cold=0
out=""
keep=0
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --images-per-class) per_class="$2"; shift 2 ;;
    --per-tar) per_tar="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --cold) cold=1; shift ;;
    *) unknown_arg "$1" ;;
  esac
done

work="$dir/wds-pack-bench"
out="${out:-$work/table.md}"
cleanup() {
  if [[ $keep -eq 0 ]]; then rm -rf "$work/demo" "$work/tars" "$work/out"; fi
}
trap cleanup EXIT
log() { echo "run_wds_pack_bench.sh: $*" >&2; }

release_build shardpack make_demo_data
pack="$build_dir/tools/shardpack"

# ---- Data --------------------------------------------------------------------
rm -rf "$work/demo" "$work/tars" "$work/out"
mkdir -p "$work/tars" "$work/out"
"$build_dir/datasets/make_demo_data" "$work/demo" --classes 10 --images-per-class "$per_class" \
  --cifar-records 0 >&2
folder="$work/demo/images"
python3 - "$folder" "$work/tars" "$per_tar" <<'EOF'
# The ImageFolder's files in its order (sorted classes, sorted names), as
# WebDataset samples: 00000000.jpg (the file's bytes), 00000000.cls (its
# class index in decimal).
import io, os, sys, tarfile
root, out, per_tar = sys.argv[1], sys.argv[2], int(sys.argv[3])
classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
items = [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
         for f in sorted(os.listdir(os.path.join(root, c)))]

def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))

for t in range(0, len(items), per_tar):
    with tarfile.open(os.path.join(out, f"shard-{t // per_tar:06d}.tar"), "w") as tar:
        for i, (path, label) in enumerate(items[t:t + per_tar], start=t):
            with open(path, "rb") as f:
                add(tar, f"{i:08d}.jpg", f.read())
            add(tar, f"{i:08d}.cls", str(label).encode())
EOF
mapfile -t tars < <(ls "$work/tars/"*.tar)
images=$(find "$folder" -type f | wc -l)
folder_bytes=$(du -sb "$folder" | cut -f1)
tar_bytes=$(cat "${tars[@]}" | wc -c)

# ---- Runs --------------------------------------------------------------------
# prepare INPUT...: the inputs' page-cache state before a run, the same for both.
# Then `sync`: the previous run's output, removed, leaves no work to the disk.
prepare() {
  sync
  if [[ $cold -eq 1 ]]; then
    find "$@" -type f -exec dd if={} iflag=nocache count=0 status=none \;
  else
    find "$@" -type f -exec cat {} + >/dev/null
  fi
  sync
}
now() { date +%s.%N; }
declare -A secs
run() {  # case
  local t0 t1
  rm -rf "$work/out/$1"
  if [[ $1 == folder ]]; then
    prepare "$folder"
    t0=$(now)
    "$pack" images "$folder" -o "$work/out/$1" -q --threads "$threads"
  else
    prepare "${tars[@]}"
    t0=$(now)
    "$pack" webdataset "${tars[@]}" -o "$work/out/$1" -q
  fi
  t1=$(now)
  secs[$1]+="$(awk "BEGIN {printf \"%.3f\", $t1 - $t0}") "
}
load() { cut -d' ' -f1 /proc/loadavg; }
load_start=$(load)
ratios=""
for ((i = 1; i <= repeats; i++)); do
  log "round $i of $repeats (load $(load))"
  if ((i % 2)); then run folder; run tars; else run tars; run folder; fi
  f=$(echo "${secs[folder]}" | awk '{print $NF}')
  t=$(echo "${secs[tars]}" | awk '{print $NF}')
  ratios+="$(awk "BEGIN {print $f / $t}") "
done
load_end=$(load)
rm -rf "$work/out"

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mf=$(echo "${secs[folder]}" | median)
mt=$(echo "${secs[tars]}" | median)
mr=$(echo "$ratios" | median)
{
  echo "$images JPEGs ($folder_bytes bytes; tars $tar_bytes bytes in ${#tars[@]} files);" \
    "$repeats rounds, order alternating; inputs $([[ $cold -eq 1 ]] && echo dropped ||
    echo resident) before each run; $(nproc) cores; load average $load_start at the start," \
    "$load_end at the end"
  echo
  echo "| job | run times (s) | median s | images/s | MB/s (input) | ratio of medians | ratio within rounds (median) |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
  printf '| `shardpack images --threads %s` (folder) | %s | %.3f | %.0f | %.0f | 1.00 | 1.00 |\n' \
    "$threads" "${secs[folder]}" "$mf" "$(echo "$images / $mf" | bc -l)" \
    "$(echo "$folder_bytes / $mf / 1000000" | bc -l)"
  printf '| `shardpack webdataset` (tars) | %s | %.3f | %.0f | %.0f | %.2f | %.2f |\n' \
    "${secs[tars]}" "$mt" "$(echo "$images / $mt" | bc -l)" \
    "$(echo "$tar_bytes / $mt / 1000000" | bc -l)" "$(echo "$mf / $mt" | bc -l)" "$mr"
} | tee "$out"
log "table written to $out"
