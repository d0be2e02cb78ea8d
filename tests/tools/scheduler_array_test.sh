#!/bin/bash
# The examples' job scripts run as a scheduler would run them, on one
# machine: examples/slurm/pack_array.sh as N concurrent array tasks with the
# SLURM_ARRAY_* variables set (arrays from 1 and from 0), then merge.sh; the
# Indexed Job of examples/k8s/pack-indexed-job.yaml as N concurrent pods
# (its args scripts, JOB_COMPLETION_INDEX set), then its merge Job. Each
# merged dataset must list the same records in the same order as one pack
# of the same input with the same seed (sharddump ls without the shard and
# offset columns). A retried task must rewrite its part byte for byte.
#
# usage: scheduler_array_test.sh SHARDPACK SHARDDUMP MAKE_DEMO_DATA EXAMPLES_DIR
set -euo pipefail
shardpack=$1 sharddump=$2 make_demo_data=$3 examples=$4
export SHARDPACK=$shardpack
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_ARRAY_TASK_COUNT \
      SLURM_ARRAY_TASK_STEP JOB_COMPLETION_INDEX

fail() { echo "FAIL: $*" >&2; exit 1; }

"$make_demo_data" "$tmp" --classes 5 --images-per-class 9 --cifar-records 0 \
    --width 24 --height 16 >/dev/null
input=$tmp/images
records() { "$sharddump" ls "$1" | cut -f1-6; }

"$shardpack" images "$input" -o "$tmp/whole" --seed 1 -q
records "$tmp/whole" >"$tmp/whole.ls"
[[ $(wc -l <"$tmp/whole.ls") -eq 45 ]] || fail "one-machine pack: not 45 records"

# Slurm: tasks MIN..MIN+N-1 started together, then the dependent merge job.
slurm_array() {  # MIN N NAME
  local min=$1 n=$2 name=$3 id pids=()
  for ((id = min; id < min + n; id++)); do
    SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=$min \
      SLURM_ARRAY_TASK_MAX=$((min + n - 1)) SLURM_ARRAY_TASK_COUNT=$n SLURM_ARRAY_TASK_STEP=1 \
      "$examples/slurm/pack_array.sh" "$tmp/$name" images "$input" --seed 1 -q &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || fail "$name: an array task failed"; done
  "$examples/slurm/merge.sh" "$tmp/$name" "$tmp/$name.merged" \
    || fail "$name: merge.sh failed"
  records "$tmp/$name.merged" | cmp -s - "$tmp/whole.ls" \
    || fail "$name: merged records differ from one pack's"
}
slurm_array 1 4 slurm1
slurm_array 0 3 slurm0

# A retried task (array index 2 of the first array) rewrites its part byte
# for byte; one cut short before its manifest is replaced too.
cp -a "$tmp/slurm1/part-2" "$tmp/first"
retry() {
  SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=4 \
    "$examples/slurm/pack_array.sh" "$tmp/slurm1" images "$input" --seed 1 -q
}
retry || fail "retried task failed"
diff -r "$tmp/first" "$tmp/slurm1/part-2" >/dev/null || fail "retried task wrote other bytes"
# Killed after its publish rename, before the manifest: the staging marker
# (docs/cli.md) names the pack; a shard is cut short too.
part=$tmp/slurm1/part-2
/usr/bin/python3 -c 'import json, sys
pack = json.load(open(sys.argv[1]))["pack"]
open(sys.argv[2], "w").write("shardpack staging directory, written by process 1\npack " + json.dumps(pack) + "\n")' \
  "$part/manifest.json" "$part/.shardpack-staging"
rm "$part/manifest.json"
truncate -s 100 "$part/shard-00000.shard"
retry || fail "retry over a part without its manifest failed"
diff -r "$tmp/first" "$part" >/dev/null || fail "retry after a cut wrote other bytes"
# Killed mid-pack: its staging folder is cleared and the part written again.
mkdir "$part.partial"
: >"$part.partial/.shardpack-staging"
echo "half a shard" >"$part.partial/shard-00000.shard.partial"
retry || fail "retry over a killed task's staging failed"
[[ ! -e $part.partial ]] || fail "the killed task's staging is left"
diff -r "$tmp/first" "$part" >/dev/null || fail "retry after a kill wrote other bytes"

# A merge that starts before every task is done is refused and writes nothing.
rm -rf "$tmp/slurm0/part-1"
if "$examples/slurm/merge.sh" "$tmp/slurm0" "$tmp/early" 2>"$tmp/early.err"; then
  fail "merge of 2 of 3 parts succeeded"
fi
grep -q "part 2 of 3 is missing" "$tmp/early.err" || fail "early merge: $(cat "$tmp/early.err")"
[[ ! -e $tmp/early && ! -e $tmp/early.partial ]] || fail "early merge left output"

# Kubernetes: the Indexed Job's pods, then the merge Job, from the manifest.
yaml=$examples/k8s/pack-indexed-job.yaml
block_scalar() {  # the Nth `args: - |` script of the manifest, dedented
  awk -v want="$1" '
    /^ *args:/ { nargs++; next }
    nargs == want && !inside && /^ *- \|/ { inside = 1; indent = -1; next }
    inside {
      if ($0 ~ /^ *$/) { print ""; next }
      match($0, /^ */); if (indent < 0) indent = RLENGTH
      if (RLENGTH < indent) exit
      print substr($0, indent + 1)
    }' "$yaml"
}
block_scalar 1 >"$tmp/pod.sh"
block_scalar 2 >"$tmp/merge-job.sh"
grep -q -- "--part auto" "$tmp/pod.sh" || fail "no pack script in $yaml"
grep -q " merge " "$tmp/merge-job.sh" || fail "no merge script in $yaml"
completions=$(awk '/^ *completions:/ { print $2; exit }' "$yaml")
parts=$(awk '/name: PARTS$/ { getline; gsub(/[^0-9]/, ""); print; exit }' "$yaml")
[[ $completions == "$parts" ]] || fail "completions $completions but PARTS $parts"
pids=()
for ((i = 0; i < 4; i++)); do
  JOB_COMPLETION_INDEX=$i INPUT=$input PARTS_DIR=$tmp/k8s PARTS=4 /bin/sh "$tmp/pod.sh" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "k8s: a pod failed"; done
PARTS_DIR=$tmp/k8s OUT=$tmp/k8s.merged /bin/sh "$tmp/merge-job.sh" || fail "k8s: merge failed"
records "$tmp/k8s.merged" | cmp -s - "$tmp/whole.ls" || fail "k8s: merged records differ"
"$sharddump" info "$tmp/k8s.merged" | grep -q "^merged  *from 4 parts" \
  || fail "k8s: sharddump info does not say it was merged"
echo "scheduler_array_test: OK"
