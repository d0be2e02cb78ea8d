#!/usr/bin/env bash
# The Python binding's benchmarks of docs/benchmarks.md ("Python binding"),
# side by side in one run, each case --repeats times
# (interleaved), medians reported:
#
#  (a) shardpack.Reader iterated from Python (bench/python_iter.py: numpy
#      zero-copy views, each batch XOR-folded once with numpy) against
#      shardbench with the same options (which folds every byte in C++):
#      50,000 CIFAR-10 records, cifar-train, batch 512, 2 transform threads,
#      both pinned to cores 0,1 with taskset. Aim: within 5% of shardbench's
#      images/s. Also, for reference: torch tensors through DLPack, and
#      copy=True (owned numpy arrays).
#  (b) examples/train_cifar.py (a small CNN on CPU, batch 128): the data wait
#      per step, i.e. the share of each step spent in next().
#
#   bench/run_python_bench.sh [--dir DIR] [--build-dir DIR] [--repeats N]
#                             [--records N] [--epochs N] [--steps N]
#                             [--out FILE] [--keep]
#
# --dir: where the CIFAR binary and the packed dataset go (default as the
#   other bench scripts: $TMPDIR, else /work/tmp, else /tmp). --build-dir: a
#   Release build (configured here if absent; default build-bench).
# Needs /usr/bin/python3 with Debian's python3-numpy and python3-torch.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
repeats=5
records=50000
epochs=10
steps=200
out=""
keep=0
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --epochs) epochs="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    *) unknown_arg "$1" ;;
  esac
done

work="$dir/python-bench"
out="${out:-$work/table.md}"
python=/usr/bin/python3
log() { echo "run_python_bench.sh: $*" >&2; }
cleanup() { if [[ $keep -eq 0 ]]; then rm -rf "$work/src" "$work/ds" "$work/results"; fi; }
trap cleanup EXIT

release_build shardbench shardpack make_demo_data shardpack_python
export PYTHONPATH="$build_dir/python"
export OMP_NUM_THREADS=2

mkdir -p "$work/results"
rm -f "$work/results/"*
"$build_dir/datasets/make_demo_data" "$work/src" --cifar-records "$records" \
  --images-per-class 0 >&2
"$build_dir/tools/shardpack" cifar "$work/src/cifar/data_batch_1.bin" -o "$work/ds" \
  --overwrite -q

load() { cut -d' ' -f1 /proc/loadavg; }
run() {  # run NAME CMD...: stdout into results/NAME.K, load into results/NAME.K.load
  local name="$1"; shift
  echo "+ taskset -c 0,1 $*" >&2
  taskset -c 0,1 "$@" > "$work/results/$name.$i"
  load > "$work/results/$name.$i.load"
}

same=(--batch-size 512 --transform cifar-train --threads 2 --epochs "$epochs")
for ((i = 1; i <= repeats; i++)); do
  log "round $i of $repeats (load $(load))"
  # Alternate which goes first.
  if ((i % 2)); then order=(shardbench python); else order=(python shardbench); fi
  for who in "${order[@]}"; do
    if [[ $who == shardbench ]]; then
      run shardbench "$build_dir/tools/shardbench" "$work/ds" "${same[@]}" --json -q
    else
      run python "$python" "$root/bench/python_iter.py" "$work/ds" "${same[@]}"
    fi
  done
  run python_torch "$python" "$root/bench/python_iter.py" "$work/ds" "${same[@]}" --output torch
  run python_copy "$python" "$root/bench/python_iter.py" "$work/ds" "${same[@]}" --copy
done
for ((i = 1; i <= 3; i++)); do
  run train_cifar "$python" "$root/examples/train_cifar.py" "$work/ds" --steps "$steps" \
    --batch-size 128 --threads 2 --log-every 50
done

"$python" - "$work/results" "$repeats" "$records" "$epochs" "$steps" > "$out" <<'PY'
import glob, json, os, re, statistics, sys

results, repeats, records, epochs, steps = sys.argv[1], *map(int, sys.argv[2:])

def files(name):
    return sorted(f for f in glob.glob(os.path.join(results, f"{name}.*")) if not f.endswith(".load"))

def med(name, key):
    return statistics.median(json.load(open(f))[key] for f in files(name))

loads = [float(open(f).read()) for f in glob.glob(os.path.join(results, "*.load"))]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"CPU: {cpu}, {os.cpu_count()} cores; {records} CIFAR-10 records (demo scenes), cifar-train, "
      f"batch 512, 2 transform threads, {epochs} epochs a run, taskset -c 0,1; {repeats} runs per "
      f"row (interleaved), medians; load average (1 min) during the runs "
      f"{min(loads):.2f}-{max(loads):.2f} (the machine is shared with other jobs).")
print()
print("| case | images/s (median) | shardbench images/s (median) | ratio | aim |")
print("|---|---:|---:|---:|---|")
ref = med("shardbench", "images_per_s")
for name, what, aim in (("python", "Python, numpy views (zero-copy)", "within 5%"),
                        ("python_torch", "Python, torch tensors (DLPack)", "-"),
                        ("python_copy", "Python, copy=True (owned numpy)", "-")):
    v = med(name, "images_per_s")
    met = "" if aim == "-" else (": met" if v / ref >= 0.95 else ": NOT met")
    print(f"| {what} | {v:,.0f} | {ref:,.0f} | {v / ref:.3f} | {aim}{met} |")
print()
print("Per-run ratios (python / shardbench, same round): " + ", ".join(
    f"{json.load(open(a))['images_per_s'] / json.load(open(b))['images_per_s']:.3f}"
    for a, b in zip(files("python"), files("shardbench"))))
print()
print("CPU time per image (process CPU seconds / images, medians; less distorted by other jobs "
      "than images/s): shardbench " + f"{med('shardbench', 'cpu_us_per_image'):.2f} us, " +
      ", ".join(f"{what} {med(name, 'cpu_us_per_image'):.2f} us" for name, what in
                (("python", "Python numpy views"), ("python_torch", "torch tensors"),
                 ("python_copy", "copy=True"))) + ".")
print()
waits, per_step = [], []
for f in files("train_cifar"):
    text = open(f).read()
    waits.append(float(re.search(r"data wait ([\d.]+)% of step time", text).group(1)))
    per_step.append([float(x) for x in re.findall(r"data wait ([\d.]+) ms/step", text)])
print(f"examples/train_cifar.py, {steps} steps of batch 128 on CPU, 3 runs: data wait "
      f"{statistics.median(waits):.2f}% of step time (median; runs: "
      f"{', '.join(f'{w:.2f}%' for w in waits)}); ms/step per 50-step window, first run: "
      f"{', '.join(f'{w:.2f}' for w in per_step[0])}.")
PY
cat "$out"
log "table written to $out"
