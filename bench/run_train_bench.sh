#!/usr/bin/env bash
# End-to-end training, docs/benchmarks.md ("End-to-end training"): real models
# trained for a fixed number of steps, fed by
#
#   shardpack  shardpack.Reader (on a GPU: device="cuda", the reader's staging)
#   pil        torchvision's DataLoader, the PIL loop (k workers, pin_memory)
#   tensor     torchvision's DataLoader, the uint8-tensor loop (decode_jpeg)
#   resident   one batch already on the device: the compute bound
#
# On a GPU: ResNet-9 on CIFAR-shaped records (batch 512), ResNet-18 and
# ResNet-50 on a JPEG ImageFolder at 224 (batch 256), bf16 autocast and
# channels_last. Without one: small models on the CPU (ResNet-9 at batch 64,
# a small CNN at 64 px), and the output says so. Each run is pinned with
# taskset -c to k cores (trainer and loader inside), k from --cores; it prints
# images/s, the share of wall time blocked in next(), and per loader the
# fewest cores that reach 0.95 of the bound. bench/train_bench.py does the
# work and its --help lists every option; this script finds the tools:
#
#   - a pip-installed wheel: `shardpack` imports in --python (default python3)
#     and the shardpack tool is in the package's bin/ or on PATH
#     (make_demo_data too, if it is on PATH);
#   - else a build: --build-dir (default build-bench, Release, configured and
#     built here unless --no-build), PYTHONPATH=BUILD/python, --python
#     default /usr/bin/python3 (the module is built for Debian's Python).
#
#   bench/run_train_bench.sh [--dir DIR] [--build-dir DIR] [--no-build]
#       [--python PY] [--out FILE] [--keep] [--records N] [--quick]
#       [--photos DIR] [--models LIST] [--loaders LIST] [--cores "1 2 4 8 16"]
#       [--steps N|MODEL=N,...] [--search binary|all|max] [--max-seconds S]
#       [--images N] [--device auto|cuda|cpu]
#
# --quick: a smoke run of about a minute (two models, few steps, the most
# cores only). --photos DIR: an ImageFolder of JPEGs (bench/make_photo_set.sh
# DIR makes one); else make_demo_data's scenes, else crops of the photographs
# scikit-learn and scikit-image ship. --dir: where the data are made (default
# as the other bench scripts: $TMPDIR, else /work/tmp, else /tmp); removed
# afterwards unless --keep. Needs torch and torchvision in --python.
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
default_build_dir="$build_dir"
records=""
repeats=""
out=""
keep=0
build=1
python=""
parse_bench_args "$@"
set -- "${extra_args[@]+"${extra_args[@]}"}"
driver=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0; shift ;;
    --python) python="$2"; shift 2 ;;
    --quick) driver+=("$1"); shift ;;
    --photos|--models|--loaders|--cores|--steps|--search|--max-seconds|--images|--device|--run-timeout)
      [[ $# -ge 2 ]] || { echo "run_train_bench.sh: $1 needs a value" >&2; exit 2; }
      driver+=("$1" "$2"); shift 2 ;;
    *) unknown_arg "$1" ;;
  esac
done
[[ -z "${repeats:-}" ]] || { echo "run_train_bench.sh: no --repeats (one run a setting)" >&2; exit 2; }
log() { echo "run_train_bench.sh: $*" >&2; }

# The wheel's tools: in the package's bin/ (pip --target puts no launcher on
# PATH), else on PATH.
wheel_tool() {
  local package
  package=$("${python:-python3}" -c 'import os, shardpack; print(os.path.dirname(shardpack.__file__))' \
            2> /dev/null) || return 1
  if [[ -x "$package/bin/shardpack" ]]; then
    echo "$package/bin/shardpack"
  else
    command -v shardpack
  fi
}
if [[ "$build_dir" == "$default_build_dir" ]] && shardpack_tool=$(wheel_tool); then
  python="${python:-python3}"
  make_demo_data="$(command -v make_demo_data || true)"
  log "the installed shardpack: $("$python" -c 'import shardpack; print(shardpack.__file__)'), tool $shardpack_tool"
else
  python="${python:-/usr/bin/python3}"
  if ((build)); then
    release_build shardpack make_demo_data shardpack_python
  fi
  shardpack_tool="$build_dir/tools/shardpack"
  make_demo_data="$build_dir/datasets/make_demo_data"
  for f in "$shardpack_tool" "$make_demo_data"; do
    [[ -x "$f" ]] || { echo "run_train_bench.sh: $f is missing (build it, or drop --no-build)" >&2; exit 1; }
  done
  export PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}"
  log "the build in $build_dir (PYTHONPATH=$PYTHONPATH)"
fi

work="$dir/train-bench"
out="${out:-$work/table.md}"
mkdir -p "$work"
args=(--shardpack "$shardpack_tool" --work "$work" --out "$out")
[[ -n "$make_demo_data" ]] && args+=(--make-demo-data "$make_demo_data")
[[ -n "$records" ]] && args+=(--records "$records")
((keep)) && args+=(--keep)
exec "$python" -u "$root/bench/train_bench.py" "${args[@]}" "${driver[@]+"${driver[@]}"}"
