#!/bin/bash
# One task of a Slurm job array packs one part; shardpack reads which from
# SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT
# (`--part auto`), so the array may start at 0, 1 or anywhere.
#
#   jid=$(sbatch --parsable --array=1-8 examples/slurm/pack_array.sh \
#         /scratch/parts images /data/imagenet/train --seed 1)
#   sbatch --dependency=afterok:$jid examples/slurm/merge.sh /scratch/parts /data/imagenet-train
#
# usage: pack_array.sh PARTS_DIR cifar|images INPUT... [shardpack flags...]
# Every task must get the same flags (merge checks they did). A retried task
# (--requeue, or a resubmitted failed index) replaces its own half-written
# part and writes the same bytes; it never deletes anything else.
#SBATCH --job-name=shardpack-pack
#SBATCH --cpus-per-task=8
#SBATCH --requeue
#SBATCH --output=shardpack-pack-%A_%a.log
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: sbatch --array=1-N $0 PARTS_DIR cifar|images INPUT... [flags...]" >&2
  exit 2
fi
parts_dir=$1
shift
mkdir -p "$parts_dir"
exec "${SHARDPACK:-shardpack}" "$@" -o "$parts_dir/part-${SLURM_ARRAY_TASK_ID:?not in a Slurm job array}" \
    --part auto
