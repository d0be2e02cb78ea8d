#!/bin/bash
# The job that runs once every array task has succeeded
# (sbatch --dependency=afterok:ARRAY_JOB_ID): checks that PARTS_DIR holds
# the parts 1..N of one pack, each once, then links them into OUT.
#
# usage: merge.sh PARTS_DIR OUT [merge flags, e.g. --overwrite]
#SBATCH --job-name=shardpack-merge
#SBATCH --cpus-per-task=1
#SBATCH --output=shardpack-merge-%j.log
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: sbatch --dependency=afterok:JOB $0 PARTS_DIR OUT [flags...]" >&2
  exit 2
fi
parts_dir=$1 out=$2
shift 2
shopt -s nullglob
parts=("$parts_dir"/part-*)
shopt -u nullglob
if [[ ${#parts[@]} -eq 0 ]]; then
  echo "merge.sh: no part-* in $parts_dir" >&2
  exit 1
fi
# The part files' order does not matter: each part knows its index.
exec "${SHARDPACK:-shardpack}" merge "${parts[@]}" -o "$out" "$@"
