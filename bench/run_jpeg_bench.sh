#!/usr/bin/env bash
# The JPEG decode benchmark of docs/benchmarks.md ("JPEG decode"),
# side by side in one run, each case --repeats times (interleaved), medians
# reported:
#
#   2,000 ImageNet-like JPEGs (make_demo_data: 500x375, ~108 KB, 10 classes x
#   200), or with --photos 2,000 crops of photographs (bench/make_photo_set.sh:
#   500x375, 375x500 or 500x333, ~36 KB, 19 classes),
#   RandomResizedCrop(224) + horizontal flip, uint8 NHWC:
#   (r) the reader on 1 and 2 threads (bench/jpeg_bench reader), on the
#       files packed as they are (`shardpack images --mode passthrough`) and
#       re-coded with restart markers (`... --restart-markers`: the same
#       pixels, and crops decode only their blocks),
#   (a) torchvision's DataLoader, ImageFolder + RandomResizedCrop(224) +
#       RandomHorizontalFlip + PILToTensor, num_workers 1 and 2
#       (bench/peers/torchvision_imagefolder.py),
#   (b) libjpeg-turbo's full-size decode rate on the original files in
#       memory (a loop of tjDecompress2 to RGB, bench/jpeg_bench tj), 1 and 2
#       threads.
#   Each is pinned to the same cores with taskset (core 0; cores 0-1).
#   Aims: (r) >= 3x (a), and >= 1.3x (b).
#   Then, per repeat, `jpeg_bench split` on core 0, without and with
#   --restart-markers: the CPU time of each phase of the reader's JPEG path on
#   one thread, beside tjDecompress2 at full size (of the originals, and of
#   the files as stored) and at 1/8 scale (the entropy-decoding floor of a
#   file without markers): medians printed after the table, and the region
#   decode and floor again with libjpeg's own Huffman decoder in place of
#   codec/jpeg_entropy.h's (--libjpeg-entropy). CPU time moves less than
#   wall time when the machine is shared. The load average is printed before
#   and after.
#
#   bench/run_jpeg_bench.sh [--dir DIR] [--build-dir DIR] [--repeats N]
#                           [--images-per-class N | --photos] [--out FILE] [--keep]
#
# --build-dir: a Release build (configured here if absent; another build
#   type is refused). Default build-bench under the repository root.
# Needs /usr/bin/python3 with Debian's python3-torchvision (installed with
# apt-get when missing; that needs root or sudo).
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
repeats=5
per_class=200
photos=0
out=""
keep=0
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --images-per-class) per_class="$2"; shift 2 ;;
    --photos) photos=1; shift ;;
    *) unknown_arg "$1" ;;
  esac
done

if ! /usr/bin/python3 -c "import torchvision" 2>/dev/null; then
  sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd=sudo
  $sudo_cmd apt-get install -y python3-torchvision >&2
fi
release_build jpeg_bench shardpack make_demo_data

work="$dir/jpeg-bench-$$"
mkdir -p "$work"
[[ $keep -eq 1 ]] || trap 'rm -rf "$work"' EXIT
[[ -n "$out" ]] || out="$work/table.md"
# make_demo_data writes the JPEGs to OUT_DIR/images/class_NN (and no CIFAR
# file with --cifar-records 0, which ImageFolder would take for a class).
images="$work/demo/images"
if [[ $photos -eq 1 ]]; then
  "$root/bench/make_photo_set.sh" "$images" --count 2000 >&2
else
  "$build_dir/datasets/make_demo_data" "$work/demo" --classes 10 --images-per-class "$per_class" \
    --cifar-records 0 >&2
fi
"$build_dir/tools/shardpack" images "$images" --mode passthrough -o "$work/ds" --overwrite -q
"$build_dir/tools/shardpack" images "$images" --mode passthrough --restart-markers \
  -o "$work/ds-rst" --overwrite -q
n=$(find "$images" -type f | wc -l)
echo "run_jpeg_bench: $n JPEGs, $(du -sb "$images" | cut -f1) bytes; datasets: passthrough" \
  "$(du -sb "$work/ds" | cut -f1), --restart-markers $(du -sb "$work/ds-rst" | cut -f1) bytes" >&2

rate() { sed -n 's/.*"images_per_s": \([0-9.]*\).*/\1/p'; }
field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p"; }
echo "run_jpeg_bench: load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
declare -A results
split_fields="tj_full_decode tj_full_decode_stored header region_decode resize entropy_floor_1_8
              entropy_floor_rows_to_crop_1_8"
for ((rep = 0; rep < repeats; ++rep)); do
  for threads in 1 2; do
    cores=0; [[ $threads -eq 2 ]] && cores=0-1
    r=$(taskset -c $cores "$build_dir/bench/jpeg_bench" reader "$work/ds" --threads $threads \
        --epochs 2 --transform rrc:224 | rate)
    m=$(taskset -c $cores "$build_dir/bench/jpeg_bench" reader "$work/ds-rst" --threads $threads \
        --epochs 2 --transform rrc:224 | rate)
    t=$(taskset -c $cores "$build_dir/bench/jpeg_bench" tj "$images" --threads $threads \
        --epochs 2 | rate)
    p=$(taskset -c $cores /usr/bin/python3 "$root/bench/peers/torchvision_imagefolder.py" \
        "$images" --num-workers $threads --batches 6 --warmup 1 | rate)
    echo "run_jpeg_bench: rep $rep threads $threads: reader $r (restart markers $m) tj $t" \
      "torchvision $p" >&2
    results[r$threads]+="$r "; results[m$threads]+="$m "; results[t$threads]+="$t "
    results[p$threads]+="$p "
  done
  for variant in plain rst; do
    flag=""; [[ $variant == rst ]] && flag=--restart-markers
    split=$(taskset -c 0 "$build_dir/bench/jpeg_bench" split "$images" --epochs 1 $flag)
    echo "run_jpeg_bench: rep $rep split $variant: $split" >&2
    for f in $split_fields; do
      results[s_${variant}_$f]+="$(echo "$split" | field "$f") "
    done
    # The same with libjpeg's own Huffman decoder (codec/jpeg_entropy.h).
    split=$(taskset -c 0 "$build_dir/bench/jpeg_bench" split "$images" --epochs 1 $flag \
      --libjpeg-entropy)
    echo "run_jpeg_bench: rep $rep split $variant, libjpeg's Huffman decoder: $split" >&2
    for f in region_decode entropy_floor_rows_to_crop_1_8; do
      results[s_${variant}_libjpeg_$f]+="$(echo "$split" | field "$f") "
    done
  done
done
echo "run_jpeg_bench: load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
{
  echo "| threads | reader rrc:224 (img/s) | reader, --restart-markers (img/s) | torchvision DataLoader (img/s) | tjDecompress2 full decode (img/s) | vs torchvision | vs full decode | --restart-markers vs torchvision | --restart-markers vs full decode |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for threads in 1 2; do
    r=$(echo "${results[r$threads]}" | median)
    m=$(echo "${results[m$threads]}" | median)
    p=$(echo "${results[p$threads]}" | median)
    t=$(echo "${results[t$threads]}" | median)
    awk -v th="$threads" -v r="$r" -v m="$m" -v p="$p" -v t="$t" \
      'BEGIN {printf "| %d | %.0f | %.0f | %.0f | %.0f | %.2fx | %.2fx | %.2fx | %.2fx |\n",
              th, r, m, p, t, r / p, r / t, m / p, m / t}'
  done
  echo
  echo "| CPU us/image, 1 thread (jpeg_bench split) | as stored | --restart-markers |"
  echo "| --- | ---: | ---: |"
  for f in $split_fields; do
    echo "| $f | $(echo "${results[s_plain_$f]}" | median) | $(echo "${results[s_rst_$f]}" | median) |"
  done
  for f in region_decode entropy_floor_rows_to_crop_1_8; do
    echo "| $f, libjpeg's Huffman decoder | $(echo "${results[s_plain_libjpeg_$f]}" | median)" \
      "| $(echo "${results[s_rst_libjpeg_$f]}" | median) |"
  done
} | tee "$out"
