#!/usr/bin/env bash
# Packing speed beside the tools it replaces, on the same disk in the same run
#:
#   - passthrough packing of 5,000 ImageNet-like JPEGs (500x375, ~108 KB,
#     from the demo generator) vs `tar cf` of the same folder
#     (tar is what WebDataset shards are);
#   - 50,000 CIFAR-10 records vs `cat` of the input file.
# Inputs are read from a warm page cache by both sides; outputs go to the same
# directory and are fsynced by both (shardpack always fsyncs; tar and cat are
# followed by `sync -f`). Each pair runs RUNS times, interleaved; medians.
#
#   bench/run_pack_bench.sh [WORK_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/shardpack-pack-bench}
runs=${2:-5}
build=${BUILD:-build-release}

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target shardpack make_demo_data >/dev/null
pack=$build/tools/shardpack

rm -rf "$work"
mkdir -p "$work"
"$build/datasets/make_demo_data" "$work/in" --classes 10 --images-per-class 500 \
  --cifar-records 50000 >/dev/null
cifar=$work/in/cifar/data_batch_1.bin
images=$work/in/images
cat "$cifar" >/dev/null
tar cf - -C "$work/in" images >/dev/null   # warm the page cache

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A times
for ((i = 0; i < runs; i++)); do
  rm -rf "$work/out"*
  t0=$(now); tar cf "$work/out.tar" -C "$work/in" images && sync -f "$work/out.tar"; t1=$(now)
  times[tar]+="$(echo "$t1 - $t0" | bc) "
  t0=$(now); $pack images "$images" -o "$work/out-images" -q --threads 2; t1=$(now)
  times[pack_images]+="$(echo "$t1 - $t0" | bc) "
  t0=$(now); cat "$cifar" >"$work/out.bin" && sync -f "$work/out.bin"; t1=$(now)
  times[cat]+="$(echo "$t1 - $t0" | bc) "
  t0=$(now); $pack cifar "$cifar" -o "$work/out-cifar" -q; t1=$(now)
  times[pack_cifar]+="$(echo "$t1 - $t0" | bc) "
done

image_bytes=$(du -sb "$images" | cut -f1)
cifar_bytes=$(stat -c %s "$cifar")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $runs runs; $(nproc) cores"
echo "| job | run times (s) | median (s) | MB/s | ratio |"
echo "| --- | --- | --- | --- | --- |"
row() {  # name bytes reference
  local m ref
  m=$(echo ${times[$1]} | tr ' ' '\n' | median)
  ref=$(echo ${times[$3]} | tr ' ' '\n' | median)
  printf '| %s | %s| %.3f | %.0f | %.2f of %s |\n' "$1" "${times[$1]}" "$m" \
    "$(echo "$2 / $m / 1000000" | bc -l)" "$(echo "$ref / $m" | bc -l)" "$3"
}
row tar "$image_bytes" tar
row pack_images "$image_bytes" tar
row cat "$cifar_bytes" cat
row pack_cifar "$cifar_bytes" cat
rm -rf "$work"
