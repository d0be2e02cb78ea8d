#!/usr/bin/env bash
# Packing an input larger than RAM: a class-sorted
# CIFAR-10 file of N records (default 8,000,000 = 24.6 GB) packed with
# --no-shuffle and with the default shuffle, beside `dd conv=fsync` of the
# same bytes on the same disk. Prints wall time, MiB/s of input, the ratio to
# dd and the peak RSS (/usr/bin/time -v: it counts the mapped input's
# file-backed pages), then the shuffled pack's quality measured as the
# reader's is (docs/benchmarks.md): label entropy per batch of 256 over the
# ideal, and the correlation of pack position with input position.
# Needs about 2.1x the input's size free under WORK_DIR; removes it all.
#
#   bench/run_pack_scale_bench.sh WORK_DIR [RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:?usage: run_pack_scale_bench.sh WORK_DIR [RECORDS]}
records=${2:-8000000}
build=${BUILD:-build}
cmake --build "$build" --target shardpack sharddump >/dev/null
pack=$build/tools/shardpack
dump=$build/tools/sharddump
trap 'rm -rf "$work"' EXIT
rm -rf "$work"
mkdir -p "$work/in"
input=$work/in/data_batch_1.bin

# Class-sorted records (label = index * 10 / N), pixels from the index, made
# in 64 MiB pieces.
/usr/bin/python3 - "$input" "$records" <<'PY'
import sys, numpy as np
path, n = sys.argv[1], int(sys.argv[2])
step = 20000
with open(path, "wb") as f:
    for s in range(0, n, step):
        idx = np.arange(s, min(n, s + step), dtype=np.uint64)
        rec = np.empty((len(idx), 3073), np.uint8)
        rec[:, 0] = (idx * 10 // n).astype(np.uint8)
        rec[:, 1:] = (idx[:, None] * 7 + np.arange(3072, dtype=np.uint64)).astype(np.uint8)
        f.write(rec.tobytes())
PY
bytes=$(stat -c %s "$input")
sync
echo "input: $records records, $bytes bytes; RAM $(free -b | awk '/Mem:/{print $2}') bytes"

now() { date +%s.%N; }
peak_kb() { awk -F': ' '/Maximum resident/{print $2}' "$1"; }
row() {  # name seconds peak_kb
  printf '%-22s %8.1f s %8.1f MiB/s %6.2fx dd  peak RSS %6.0f MiB  load %s\n' "$1" "$2" \
    "$(echo "$bytes / 1048576 / $2" | bc -l)" "$(echo "$dd_s / $2" | bc -l)" \
    "$(echo "$3 / 1024" | bc -l)" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
t0=$(now)
/usr/bin/time -v -o "$work/dd.time" dd if="$input" of="$work/dd.bin" bs=4M conv=fsync status=none
dd_s=$(echo "$(now) - $t0" | bc)
rm -f "$work/dd.bin"
row "dd conv=fsync" "$dd_s" "$(peak_kb "$work/dd.time")"

for mode in --no-shuffle --shuffle; do
  echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
  t0=$(now)
  /usr/bin/time -v -o "$work/pack.time" "$pack" cifar "$input" --cifar 10 -o "$work/out" \
    "$mode" -q
  s=$(echo "$(now) - $t0" | bc)
  row "shardpack $mode" "$s" "$(peak_kb "$work/pack.time")"
  if [[ $mode == --shuffle ]]; then
    # Keys are "data_batch_1.bin/<input index>", in pack order.
    "$dump" ls "$work/out" | /usr/bin/python3 -c '
import sys, numpy as np
n = int(sys.argv[1])
idx = np.array([int(l.split("\t")[1].split("/")[1]) for l in sys.stdin], np.int64)
assert len(idx) == n and len(np.unique(idx)) == n, "not a permutation"
labels = idx * 10 // n
b = 256
m = len(labels) // b * b
counts = np.zeros((m // b, 10))
np.add.at(counts, (np.repeat(np.arange(m // b), b), labels[:m]), 1)
p = counts / b
h = -(np.where(p > 0, p * np.log2(np.where(p > 0, p, 1)), 0)).sum(1)
ideal = np.log2(10)
print(f"shuffle quality: label entropy per batch of {b}: mean {h.mean() / ideal:.3f}, "
      f"min {h.min() / ideal:.3f} of ideal; position correlation "
      f"{np.corrcoef(np.arange(n), idx)[0, 1]:+.4f}")
' "$records"
  fi
  rm -rf "$work/out"
done
