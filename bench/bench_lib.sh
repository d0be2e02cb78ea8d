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
