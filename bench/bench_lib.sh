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

# release_build TARGET...: configures $build_dir as a Release build when it
# has no cache yet (refuses one of another type), then builds the targets.
release_build() {
  if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  elif ! grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build_dir/CMakeCache.txt"; then
    echo "$(basename "$0"): $build_dir is not a Release build; pass --build-dir" >&2
    exit 2
  fi
  ninja -C "$build_dir" "$@" >&2
}

# parse_bench_args "$@": the options the bench scripts share (--dir,
# --build-dir, --repeats, --records, --out, --keep; -h / --help prints the
# script's header comment). Anything else is left, in order, in `extra_args`
# for the script's own options.
parse_bench_args() {
  extra_args=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --dir) dir="$2"; shift 2 ;;
      --build-dir) build_dir="$2"; shift 2 ;;
      --repeats) repeats="$2"; shift 2 ;;
      --records) records="$2"; shift 2 ;;
      --out) out="$2"; shift 2 ;;
      --keep) keep=1; shift ;;
      -h|--help) sed -n '2,/^set -euo pipefail$/p' "$0" | sed '$d'; exit 0 ;;
      *) extra_args+=("$1"); shift ;;
    esac
  done
}

# unknown_arg NAME: the usage error for an option the script does not take.
unknown_arg() {
  echo "$(basename "$0"): unknown argument $1 (see --help)" >&2
  exit 2
}
