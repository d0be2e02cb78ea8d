#!/usr/bin/env bash
# The reader (shardbench) over the three backends, docs/benchmarks.md
# ("The reader on LMDB and HDF5"), side by side in one run, each case
# --repeats times (interleaved), medians reported. (bench/run_backend_bench.sh
# compares the backend libraries with python's lmdb and h5py.)
#
# The same data packed three ways (shardpack --format shard|lmdb|hdf5), from
# the page cache, on cores 0,1, batch 512, 2 reader threads:
#  - 50,000 CIFAR records, `shardbench --transform none`, in stored order
#    (--no-shuffle) and shuffled (the default), 20 epochs; beside python's lmdb
#    and h5py reading the same LMDB and HDF5 files, in key order and in a
#    random order (bench/peers/backend_read.py [--shuffled]);
#  - 2,000 demo JPEGs (500x375, ~108 KB), `--transform rrc:224`, stored order
#    and shuffled, 1 epoch.
# Aims: each backend within 2x of `.shard`, and ahead of the python libraries.
#
#   bench/run_backend_reader_bench.sh [--dir DIR] [--build-dir DIR] [--repeats N]
#                                     [--records N] [--out FILE] [--keep]
#
# Needs ~1 GB under --dir (default: $TMPDIR, else /work/tmp, else /tmp);
# removed at the end unless --keep.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
repeats=5
records=50000
out=""
keep=0
parse_bench_args "$@"
[[ ${#extra_args[@]} -eq 0 ]] || unknown_arg "${extra_args[0]}"

work="$dir/backend-bench"
out="${out:-$work/table.md}"
python=/usr/bin/python3
cleanup() { [[ $keep -eq 1 ]] || rm -rf "$work/src" "$work/ds" "$work/results"; }
trap cleanup EXIT
log() { echo "run_backend_reader_bench.sh: $*" >&2; }

release_build shardbench shardpack make_demo_data
shardbench="$build_dir/tools/shardbench"
shardpack="$build_dir/tools/shardpack"

# ---- Data --------------------------------------------------------------------
mkdir -p "$work/results" "$work/ds"
rm -f "$work/results/"*.json
"$build_dir/datasets/make_demo_data" "$work/src" --cifar-records "$records" --classes 10 \
  --images-per-class 200 >&2
for f in shard lmdb hdf5; do
  "$shardpack" cifar "$work/src/cifar/data_batch_1.bin" -o "$work/ds/cifar-$f" --format "$f" \
    --overwrite -q
  "$shardpack" images "$work/src/images" --mode passthrough -o "$work/ds/jpeg-$f" \
    --format "$f" --overwrite -q
done
cat "$work/ds"/*/* > /dev/null  # into the page cache

# ---- Runs --------------------------------------------------------------------
load() { cut -d' ' -f1 /proc/loadavg; }
run() {  # run NAME CMD...: JSON of one run into results/NAME.K.json
  local name="$1"; shift
  echo "+ taskset -c 0,1 $*" >&2
  taskset -c 0,1 "$@" > "$work/results/$name.$i.json"
}
common=(--batch-size 512 --threads 2 --json -q)
for ((i = 1; i <= repeats; i++)); do
  log "round $i of $repeats (load $(load))"
  echo "$(load)" > "$work/results/load.$i"
  for f in shard lmdb hdf5; do
    run "cifar_${f}_seq" "$shardbench" "$work/ds/cifar-$f" "${common[@]}" --transform none \
      --epochs 20 --no-shuffle
    run "cifar_${f}_shuf" "$shardbench" "$work/ds/cifar-$f" "${common[@]}" --transform none \
      --epochs 20
    run "jpeg_${f}_seq" "$shardbench" "$work/ds/jpeg-$f" "${common[@]}" --transform rrc:224 \
      --epochs 1 --no-shuffle
    run "jpeg_${f}_shuf" "$shardbench" "$work/ds/jpeg-$f" "${common[@]}" --transform rrc:224 \
      --epochs 1
  done
  for f in lmdb hdf5; do
    run "py_${f}_seq" "$python" "$root/bench/peers/backend_read.py" "$work/ds/cifar-$f" --repeats 1
    run "py_${f}_shuf" "$python" "$root/bench/peers/backend_read.py" "$work/ds/cifar-$f" \
      --repeats 1 --shuffled
  done
done

# ---- Table -------------------------------------------------------------------
"$python" - "$work/results" "$repeats" "$records" > "$out" <<'PY'
import glob, json, os, statistics, sys
results, repeats, records = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def med(name, key="images_per_s"):
    vals = [json.load(open(f))[key] for f in glob.glob(os.path.join(results, f"{name}.*.json"))]
    return statistics.median(vals)
loads = [float(open(f).read()) for f in glob.glob(os.path.join(results, "load.*"))]
print(f"Medians of {repeats} runs; load average {min(loads):.1f} to {max(loads):.1f}; "
      f"images/s (ratio to `.shard` in brackets).\n")
print("| data, order | `.shard` | LMDB | HDF5 | python lmdb | h5py |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for data, label in (("cifar", f"{records:,} CIFAR, none"), ("jpeg", "2,000 JPEGs, rrc:224")):
    for order, oname in (("seq", "stored order"), ("shuf", "shuffled")):
        ref = med(f"{data}_shard_{order}")
        cells = [f"{ref:,.0f}"]
        for f in ("lmdb", "hdf5"):
            v = med(f"{data}_{f}_{order}")
            cells.append(f"{v:,.0f} ({v / ref:.2f})")
        if data == "cifar":  # python's rate against ours on the same backend's files
            for f in ("lmdb", "hdf5"):
                v = med(f"py_{f}_{order}", "records_per_s")
                cells.append(f"{v:,.0f} ({v / med(f'{data}_{f}_{order}'):.2f} of ours)")
        else:
            cells += ["-", "-"]
        print(f"| {label}, {oname} | " + " | ".join(cells) + " |")
PY
cat "$out"
