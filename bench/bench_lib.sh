# Sourced by the bench/run_*.sh scripts: what they all start with.
#   root       the repository root
#   build_dir  the default Release build directory
#   dir        where benchmark files go: $TMPDIR if set, else /work/tmp when
#              /work exists, else /tmp (a real disk, not /dev/shm)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build-bench"
if [[ -n "${TMPDIR:-}" ]]; then
  dir="$TMPDIR"
elif [[ -d /work ]]; then
  dir=/work/tmp
else
  dir=/tmp
fi
