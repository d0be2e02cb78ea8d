#!/usr/bin/env bash
# shardpack side by side with its peers (issue 32) on the same bytes and the
# same cores: bench/peers/peer_bench.py over every loader module of
# bench/peers/ (peer_NAME.py; the interface is bench/peers/peer_api.py).
#
#   bench/peers/run_peer_bench.sh [--dir DIR] [--repeats N] [--records N]
#       [--out FILE] [--keep] [--peers a,b,...] [--workers 1,2]
#       [--drop-all-caches] [--kind cifar|imagefolder|caption|both] [--images N]
#       [--classes C] [--noise S] [--batch-size B] [--device cpu|cuda]
#       [--timeout S]
#
# 1. bench/peers/setup.sh: build/venv-peers (every peer pinned,
#    bench/peers/requirements.txt) with shardpack's own cp311 wheel in it.
# 2. The input: a class-sorted CIFAR-10 binary of --records records (default
#    50,000): the real fragment of ../shared/data/cifar10-fragment (or
#    $SHARDPACK_CIFAR_FRAGMENT) first, synthetic pixels for the rest.
#    --kind imagefolder: an ImageFolder of --images JPEGs (default 20,000)
#    in --classes classes (default 100), 500x375 q90 (peer_bench.py
#    gen-imagefolder; --noise 20 makes them ~110 KB, ImageNet's size).
#    --kind caption: the same JPEGs, each with a caption of 60 bytes beside
#    it (gen-imagefolder --captions); the loaders deliver the captions with
#    the images and labels (the peers that have no caption kind are rows
#    that say so).
# 3. Each peer converts it with its own tool (timed, peak RSS of the process
#    tree, bytes on disk); then --repeats rounds (default 3), the peers' order
#    rotated each round, of loader runs at 1 and 2 workers (taskset -c 0 and
#    -c 0,1): warm cache (every file read first) and cold (the dataset's
#    files dropped with fadvise, or the whole page cache with
#    --drop-all-caches, which needs root), 2 epochs each: the steady epoch's
#    images/s, the first epoch's, the time from open to the first batch, the
#    peak RSS of the process tree, the label entropy of the first 10 batches.
# --peers: default all ten: shardpack,webdataset,mosaicml,litdata,ffcv,
#   ffcv-proportion (imagefolder only),dali,spdl,torchdata,grain; for --kind
#   caption the three that have that kind:
#   shardpack,webdataset,mosaicml.
# --out: the markdown table (also printed); default DIR/peer-bench/table.md,
#   with --kind both DIR/peer-bench/table-KIND.md.
# --batch-size: default 512 for cifar, 128 for imagefolder and caption.
# --device cuda: every batch delivered to the GPU (shardpack's GPU staging,
#   DALI's mixed decoder, else a host copy with torch); needs a CUDA torch in
#   the venv, so on a GPU machine that has one, point SHARDPACK_PEERS_PYTHON
#   at its python (the peers and shardpack's wheel installed there) instead
#   of building build/venv-peers, whose torch is the CPU build.
# --timeout: seconds one convert or loader run may take (default 600); a run
#   past it is killed and recorded as an error row.
# Needs ~250 MB under DIR for cifar, ~6x the JPEGs' bytes for imagefolder
# (removed at the end unless --keep).
set -euo pipefail

# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/../bench_lib.sh"
repeats=3
records=50000
out=""
keep=0
parse_bench_args "$@"
peers=""
workers=1,2
drop_all=()
kind=cifar
images=20000
classes=100
noise=8
batch_size=""
device=cpu
timeout=600
set -- "${extra_args[@]+"${extra_args[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --peers) peers="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --drop-all-caches) drop_all=(--drop-all-caches); shift ;;
    --kind) kind="$2"; shift 2 ;;
    --images) images="$2"; shift 2 ;;
    --classes) classes="$2"; shift 2 ;;
    --noise) noise="$2"; shift 2 ;;
    --batch-size) batch_size="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    *) unknown_arg "$1" ;;
  esac
done

case "$kind" in
  cifar|imagefolder|caption) kinds=("$kind") ;;
  both) kinds=(cifar imagefolder) ;;
  *) echo "run_peer_bench.sh: --kind $kind: cifar, imagefolder, caption or both" >&2; exit 2 ;;
esac
if [[ -z $peers ]]; then
  peers=shardpack,webdataset,mosaicml,litdata,ffcv,ffcv-proportion,dali,spdl,torchdata,grain
  [[ $kind == caption ]] && peers=shardpack,webdataset,mosaicml
fi
work="$dir/peer-bench"
fragment="${SHARDPACK_CIFAR_FRAGMENT:-$root/../shared/data/cifar10-fragment/data_batch_1.bin}"
cleanup() {
  if [[ $keep -eq 0 ]]; then rm -rf "$work/src" "$work/cifar/ds" "$work/imagefolder/ds" \
    "$work/caption/ds"; fi
}
trap cleanup EXIT

if [[ -n ${SHARDPACK_PEERS_PYTHON:-} ]]; then
  python="$SHARDPACK_PEERS_PYTHON"
else
  python="$root/$("$root/bench/peers/setup.sh")"
fi
bench="$root/bench/peers/peer_bench.py"
mkdir -p "$work/src"
for k in "${kinds[@]}"; do
  if [[ $k == cifar ]]; then
    src="$work/src/data_batch_1.bin"
    fragment_args=()
    if [[ -f $fragment ]]; then
      fragment_args=(--fragment "$fragment")
    else
      echo "run_peer_bench.sh: no CIFAR-10 fragment at $fragment: synthetic records only" >&2
    fi
    "$python" "$bench" gen-cifar "$src" --records "$records" \
      "${fragment_args[@]+"${fragment_args[@]}"}"
  else
    src="$work/src/$k"
    captions=()
    [[ $k == caption ]] && captions=(--captions)
    rm -rf "$src"
    "$python" "$bench" gen-imagefolder "$src" --images "$images" --classes "$classes" \
      --noise "$noise" "${captions[@]+"${captions[@]}"}"
  fi
  table="${out:-$work/table.md}"
  [[ ${#kinds[@]} -gt 1 ]] && table="${table%.md}-$k.md"
  bs="$batch_size"
  [[ -z $bs ]] && { bs=512; [[ $k != cifar ]] && bs=128; }
  rm -rf "$work/$k"
  "$python" "$bench" run --kind "$k" --src "$src" --work "$work/$k" --peers "$peers" \
    --workers "$workers" --repeats "$repeats" --batch-size "$bs" --out "$table" \
    --device "$device" --timeout "$timeout" \
    "${drop_all[@]+"${drop_all[@]}"}"
  echo "run_peer_bench.sh: table written to $table" >&2
done
