#!/usr/bin/env bash
# The reader benchmarks of docs/benchmarks.md ("Reader"), side by
# side in one run, each case --repeats times (interleaved), medians reported:
#
#  (a) 50,000 CIFAR-10 records, train transform (random crop, padding 4, flip),
#      batch 512: shardbench --threads 1 / 2 against two torchvision
#      DataLoader loops with 1 / 2 workers (bench/peers/torchvision_cifar.py),
#      all pinned to the same cores with taskset: the PIL one (a PIL image per
#      sample, as torchvision.datasets.CIFAR10) and the tensor one (the
#      strongest plain loop: one uint8 tensor, crop and flip on uint8 CHW
#      tensors). shardbench also runs --compare-memcpy: the same pixel bytes
#      memcpy'd in the same order, the memory-bandwidth bound beside its cost.
#      Aims: >= 50x the tensor loop, >= 1,250,000 images/s on 2 threads.
#  (b) raw streaming (--transform none) from /dev/shm against a raw read of
#      the same files in the same process (4 MiB preads, as dd bs=4M).
#      Aim: >= 80%.
#  (c) raw streaming from a cold page cache: --io direct --drop-caches against
#      4 MiB O_DIRECT reads (as dd bs=4M iflag=direct). Aim: >= 90%.
#      Also, for reference, the same cold with buffered pread against dd.
#  `dd` itself is run beside (b) and (c) as a check on the in-process raw read.
#
#   bench/run_reader_bench.sh [--dir DIR] [--build-dir DIR] [--repeats N]
#                             [--records N] [--out FILE] [--keep]
#
# --dir: where the CIFAR binary and the packed dataset go (must be a real
#   disk for (c), not tmpfs). Default: $TMPDIR if set, else /work/tmp when
#   /work exists, else /tmp. Needs ~320 MB there and ~160 MB of /dev/shm;
#   both are removed at the end unless --keep.
# --build-dir: a Release build (configured here if absent). Default
#   build-bench under the repository root.
# --out: where the markdown table is written (also printed). Default
#   DIR/reader-bench/table.md.
# Needs /usr/bin/python3 with Debian's python3-torchvision (installed with
# apt-get when missing; that needs root or sudo).
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
repeats=5
records=50000
out=""
keep=0
parse_bench_args "$@"
[[ ${#extra_args[@]} -eq 0 ]] || unknown_arg "${extra_args[0]}"

work="$dir/reader-bench"
shm="/dev/shm/shardpack-reader-bench-$$"
out="${out:-$work/table.md}"
python=/usr/bin/python3
peer="$root/bench/peers/torchvision_cifar.py"

cleanup() {
  rm -rf "$shm"
  if [[ $keep -eq 0 ]]; then rm -rf "$work/src" "$work/ds" "$work/results"; fi
}
trap cleanup EXIT

log() { echo "run_reader_bench.sh: $*" >&2; }

# ---- Build -------------------------------------------------------------------
release_build shardbench shardpack make_demo_data
shardbench="$build_dir/tools/shardbench"
shardpack="$build_dir/tools/shardpack"
make_demo_data="$build_dir/datasets/make_demo_data"

# ---- The peer's packages -----------------------------------------------------
if ! "$python" -c 'import torchvision' 2>/dev/null; then
  log "installing python3-torchvision (Debian's; large, once)"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get install -y python3-torchvision >&2
fi

# ---- Data --------------------------------------------------------------------
mkdir -p "$work/results"
rm -f "$work/results/"*.json
if "$make_demo_data" --help 2>&1 | grep -q -- '--cifar-records'; then
  "$make_demo_data" "$work/src" --cifar-records "$records" --images-per-class 0 >&2
else
  # The content does not matter for speed: random pixels and labels.
  mkdir -p "$work/src/cifar"
  "$python" - "$work/src/cifar/data_batch_1.bin" "$records" <<'EOF'
import sys, numpy as np
rng = np.random.default_rng(1)
n = int(sys.argv[2])
rec = rng.integers(0, 256, size=(n, 3073), dtype=np.uint8)
rec[:, 0] = rng.integers(0, 10, size=n)
rec.tofile(sys.argv[1])
EOF
fi
cifar_bin="$work/src/cifar/data_batch_1.bin"
"$shardpack" cifar "$cifar_bin" -o "$work/ds" --overwrite -q
mkdir -p "$shm"
cp -r "$work/ds" "$shm/ds"
disk_ds="$work/ds"
shm_ds="$shm/ds"

# ---- Runs --------------------------------------------------------------------
load() { cut -d' ' -f1 /proc/loadavg; }
echo "$(load)" > "$work/results/load_start"

# Drops the page cache of every file under $1 (no root: fadvise DONTNEED).
drop() {
  "$python" - "$@" <<'EOF'
import os, sys
for d in sys.argv[1:]:
    for name in os.listdir(d):
        p = os.path.join(d, name)
        fd = os.open(p, os.O_RDONLY)
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
EOF
}

# dd of every shard file of $2 on cores $1, with extra dd flags; prints MB/s
# (10^6 bytes, as dd counts).
dd_rate() {
  local cores="$1" ds="$2"; shift 2
  local start end bytes=0
  start=$(date +%s.%N)
  for f in "$ds"/*.shard; do
    taskset -c "$cores" dd if="$f" of=/dev/null bs=4M "$@" status=none
    bytes=$((bytes + $(stat -c %s "$f")))
  done
  end=$(date +%s.%N)
  "$python" -c "print($bytes / ($end - $start) / 1e6)"
}

run() {  # run NAME CORES CMD...: JSON of one run into results/NAME.K.json
  local name="$1" cores="$2"; shift 2
  local file="$work/results/$name.$i.json"
  echo "+ taskset -c $cores $*" >&2
  taskset -c "$cores" "$@" > "$file"
  echo "{\"load\": $(load)}" > "$work/results/$name.$i.load"
}

common=(--batch-size 512 --json -q)
for ((i = 1; i <= repeats; i++)); do
  log "round $i of $repeats (load $(load))"
  # (a) train transform against torchvision, same cores.
  for t in 1 2; do
    cores=0; [[ $t -eq 2 ]] && cores=0,1
    run "reader_t$t" "$cores" "$shardbench" "$disk_ds" "${common[@]}" \
      --transform cifar-train --threads "$t" --epochs 20 --warmup 5 --compare-memcpy
    for mode in pil tensor; do
      run "torchvision_${mode}_w$t" "$cores" "$python" "$peer" "$cifar_bin" --dataset "$mode" \
        --num-workers "$t" --batch-size 512 --warmup 5 --batches 40
    done
  done
  # (b) raw streaming from /dev/shm against 4 MiB preads of the same files,
  # shuffled (the default) and in stored order.
  run shm_raw 0,1 "$shardbench" "$shm_ds" "${common[@]}" --transform none --threads 2 \
    --epochs 10 --compare-raw
  run shm_raw_seq 0,1 "$shardbench" "$shm_ds" "${common[@]}" --transform none --threads 2 \
    --epochs 10 --compare-raw --no-shuffle
  echo "{\"dd_mb_per_s\": $(dd_rate 0 "$shm_ds")}" > "$work/results/dd_shm.$i.json"
  # (c) cold page cache: O_DIRECT against O_DIRECT (shuffled and in stored
  # order); buffered against buffered.
  run cold_direct 0,1 "$shardbench" "$disk_ds" "${common[@]}" --transform none --threads 2 \
    --epochs 1 --io direct --drop-caches --compare-raw
  run cold_direct_seq 0,1 "$shardbench" "$disk_ds" "${common[@]}" --transform none \
    --threads 2 --epochs 1 --io direct --drop-caches --compare-raw --no-shuffle
  echo "{\"dd_mb_per_s\": $(dd_rate 0 "$disk_ds" iflag=direct)}" > "$work/results/dd_direct.$i.json"
  run cold_pread 0,1 "$shardbench" "$disk_ds" "${common[@]}" --transform none --threads 2 \
    --epochs 1 --io pread --drop-caches --compare-raw
  drop "$disk_ds"
  echo "{\"dd_mb_per_s\": $(dd_rate 0 "$disk_ds")}" > "$work/results/dd_cold.$i.json"
done
echo "$(load)" > "$work/results/load_end"

# ---- Table -------------------------------------------------------------------
"$python" - "$work/results" "$repeats" "$records" > "$out" <<'EOF'
import glob, json, os, platform, statistics, sys

results, repeats, records = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def runs(name):
    files = sorted(glob.glob(os.path.join(results, f"{name}.*.json")))
    return [json.load(open(f)) for f in files]

def med(name, key):
    return statistics.median(r[key] for r in runs(name))

def loads():
    vals = []
    for f in glob.glob(os.path.join(results, "*.load")):
        vals.append(json.load(open(f))["load"])
    return vals

cpu = "unknown"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
r1 = runs("reader_t1")[0]
peer = runs("torchvision_pil_w1")[0]
peers = (("pil", "PIL image per sample"), ("tensor", "uint8 tensor, no PIL"))
ld = loads()
print(f"CPU: {cpu}, {os.cpu_count()} cores; kernel {platform.release()}; "
      f"{records} CIFAR-10 records, one shard of {r1['dataset_bytes'] / 1e6:.1f} MB; "
      f"{repeats} runs per row (interleaved), medians; "
      f"load average (1 min) during the runs {min(ld):.2f}-{max(ld):.2f}; "
      f"torch {peer['torch']}, torchvision {peer['torchvision']} (Debian).")
print()
print("| case | measured | median | reference | median | ratio | aim |")
print("|---|---|---:|---|---:|---:|---|")

def row(case, what, value, unit, ref, ref_value, ratio, aim):
    print(f"| {case} | {what} | {value:,.0f} {unit} | {ref} | {ref_value:,.0f} {unit} | "
          f"{ratio:.2f}x | {aim} |")

# (a) after 5 batches on both sides: the peer leaves its workers' start-up
# out (--warmup 5), shardbench its first reads and plan (--warmup 5).
for t in (1, 2):
    cores = "0" if t == 1 else "0,1"
    v = med(f"reader_t{t}", "steady_images_per_s")
    for mode, what in peers:
        p = med(f"torchvision_{mode}_w{t}", "images_per_s")
        if mode == "tensor":
            aim = ">= 50x" + (", >= 1,250,000 images/s" if t == 2 else "")
            met = "met" if v / p >= 50 and (t == 1 or v >= 1.25e6) else "NOT met"
            aim = f"{aim}: {met}"
        else:
            aim = "-"
        row(f"(a) cifar-train, batch 512, cores {cores}",
            f"shardbench --threads {t}, after 5 batches", v, "img/s",
            f"torchvision DataLoader ({what}), {t} worker{'s' if t > 1 else ''}", p, v / p, aim)

cpu_rows = []
for t in (1, 2):
    v = med(f"reader_t{t}", "steady_cpu_us_per_image")
    p = {mode: med(f"torchvision_{mode}_w{t}", "cpu_us_per_image") for mode, _ in peers}
    c = {mode: med(f"torchvision_{mode}_w{t}", "cores_used") for mode, _ in peers}
    cpu_rows.append((t, v, med(f"reader_t{t}", "steady_cores_used"), p, c,
                     med(f"reader_t{t}", "memcpy_ns_per_image"),
                     med(f"reader_t{t}", "memcpy_threads_ns_per_image"),
                     med(f"reader_t{t}", "memcpy_gb_per_s")))

def raw_row(case, name, dd_name, aim, what, ref):
    v = med(name, "stream_mb_per_s")
    raw = med(name, "raw_mb_per_s")
    ratio = statistics.median(r["raw_ratio"] for r in runs(name))
    dd = med(dd_name, "dd_mb_per_s")
    met = "" if aim is None else (": met" if ratio >= aim else ": NOT met")
    aim_text = "-" if aim is None else f">= {aim:.0%}{met}"
    row(case, what, v, "MB/s", f"{ref} (dd: {dd:,.0f} MB/s)", raw, ratio, aim_text)

raw_row("(b) no transform, /dev/shm (mmap), shuffled", "shm_raw", "dd_shm", 0.80,
        "shardbench --threads 2, 10 epochs", "4 MiB preads of the files")
raw_row("(b) no transform, /dev/shm (mmap), --no-shuffle", "shm_raw_seq", "dd_shm", 0.80,
        "shardbench --threads 2, 10 epochs", "4 MiB preads of the files")
raw_row("(c) no transform, cold cache, O_DIRECT, shuffled", "cold_direct", "dd_direct", 0.90,
        "shardbench --io direct --drop-caches, 1 epoch", "4 MiB O_DIRECT preads")
raw_row("(c) no transform, cold cache, O_DIRECT, --no-shuffle", "cold_direct_seq", "dd_direct",
        0.90, "shardbench --io direct --drop-caches, 1 epoch", "4 MiB O_DIRECT preads")
raw_row("(c') no transform, cold cache, buffered, shuffled", "cold_pread", "dd_cold", None,
        "shardbench --io pread --drop-caches, 1 epoch", "4 MiB preads, cold")
print()
print("(a) over the whole run, shardbench's start-up included (the first batch waits for the "
      "dataset's first reads and the first plan): ")
print()
for t in (1, 2):
    v = med(f"reader_t{t}", "images_per_s")
    p = med(f"torchvision_tensor_w{t}", "images_per_s")
    print(f"- --threads {t}: {v:,.0f} images/s, {v / p:.1f}x the tensor loop; first batch after "
          f"{med(f'reader_t{t}', 'first_batch_s'):.3f} s, {med(f'reader_t{t}', 'cpu_us_per_image'):.2f} "
          f"CPU us per image; ring of {runs(f'reader_t{t}')[0]['ring_slots']} slots")
print()
print("(a) in CPU time, which a shared machine does not distort: the process's (and the "
      "DataLoader workers') CPU seconds per image over the timed part (after the 5 warm-up "
      "batches on both sides), medians.")
print()
print("| threads / workers | shardbench CPU us/image | cores busy | torchvision PIL CPU us/image "
      "| cores busy | ratio | torchvision tensor CPU us/image | cores busy | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for t, v, cv, p, c, *_ in cpu_rows:
    print(f"| {t} | {v:.2f} | {cv:.2f} | {p['pil']:.1f} | {c['pil']:.2f} | {p['pil'] / v:.0f}x "
          f"| {p['tensor']:.1f} | {c['tensor']:.2f} | {p['tensor'] / v:.0f}x |")
print()
print("(a) beside the memory-bandwidth bound (shardbench --compare-memcpy): the same stored "
      "pixel bytes (3072 a record) memcpy'd in the reader's epoch order into batch slots and "
      "XOR-folded, in the same process after the reader's run, medians.")
print()
print("| threads | shardbench CPU ns/image | memcpy ns/image, 1 thread | memcpy GB/s | "
      "reader / memcpy | memcpy wall ns/image, split over the threads |")
print("|---|---:|---:|---:|---:|---:|")
for t, v, _, _, _, m1, mt, gb in cpu_rows:
    print(f"| {t} | {v * 1000:.0f} | {m1:.0f} | {gb:.1f} | {v * 1000 / m1:.1f}x | {mt:.0f} |")

def wait(name, stage):
    return statistics.median(r["wait_s"][stage] for r in runs(name))

print()
print("Reader stage waits (medians, seconds, summed over the threads waiting), CPU and memory:")
print()
for n in ("reader_t1", "reader_t2", "shm_raw", "shm_raw_seq", "cold_direct", "cold_direct_seq",
          "cold_pread"):
    print(f"- {n}: waits io {wait(n, 'io'):.3f}, transform {wait(n, 'transform'):.3f}, "
          f"consumer {wait(n, 'consumer'):.3f} in {med(n, 'seconds'):.3f} s; "
          f"{med(n, 'cpu_us_per_image'):.2f} CPU us per image, {med(n, 'cores_used'):.2f} cores busy; "
          f"peak RSS {med(n, 'peak_rss_mb'):.0f} MB")
EOF
cat "$out"
log "table written to $out"
