#!/usr/bin/env bash
# The wheel as a user gets it (docs/python.md, "Installing with pip"):
#
#   tests/wheel/wheel_test.sh BUILD_DIR
#
# BUILD_DIR is scripts/test's build/ (its make_demo_data and test helpers
# make the fixtures). scripts/wheel makes the manylinux wheel for Debian's
# Python (scikit-build-core in its pinned build venv, then auditwheel) and the
# sdist, with a `cmake` and a `ninja` first on PATH that fail as pyenv's shims
# do for a Python that lacks them: the build must take the build venv's. Then,
# with LD_LIBRARY_PATH unset:
#  1. the wheel installs into a fresh venv of Debian's Python
#     (--system-site-packages: Debian's numpy, torch, PIL, h5py, lmdb);
#  2. tests/wheel/wheel_check.py: the tag is manylinux_2_34 and `auditwheel
#     show` accepts it, no ELF file needs a newer glibc or libstdc++ symbol
#     version, the metadata has the extras and the three tools, one version;
#     every installed ELF file resolves each library inside the wheel or to
#     the base set, and the build tree's module (linked to the system's
#     libraries) is caught by the same check;
#  3. the three tools on the venv's PATH pack, verify and stream a dataset;
#  4. the whole Python suite (tests/python/*_test.py) passes against the
#     installed package, not the build tree: under Debian's Python (numpy 1,
#     torch 1.13) and, installed with --target, under the venv of
#     scripts/python-env (pip's torch 2.13 CPU, numpy 2, Lightning,
#     Accelerate, torchdata), where the framework tests run too;
#  5. the sdist holds every file git tracks and nothing else but PKG-INFO,
#     and CMake configures from it;
#  6. pip uninstall leaves the venv as it was before the install.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
python=/usr/bin/python3
unset LD_LIBRARY_PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "wheel_test: FAIL: $*" >&2; exit 1; }
step() { echo "--- wheel_test: $*" >&2; }

step "the wheel and the sdist (scripts/wheel), pyenv-like shims first on PATH"
mkdir "$tmp/shims"
for tool in cmake ninja; do
  printf '#!/bin/sh\necho "pyenv: %s: command not found" >&2\nexit 127\n' "$tool" \
    > "$tmp/shims/$tool"
  chmod +x "$tmp/shims/$tool"
done
PATH="$tmp/shims:$PATH" "$root/scripts/wheel" --python "$python" --out "$tmp/dist" --sdist >&2
wheel=$(ls "$tmp"/dist/shardpack-*.whl)
sdist=$(ls "$tmp"/dist/shardpack-*.tar.gz)

step "1. install into a fresh venv"
venv="$tmp/venv"
"$python" -m venv --system-site-packages "$venv"
(cd "$venv" && find . | sort) > "$tmp/before"
"$venv/bin/pip" install -q --no-index --no-deps "$wheel"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
[[ -d $site/shardpack.libs && -x $site/shardpack/bin/shardpack ]] ||
  fail "$site lacks shardpack.libs/ or shardpack/bin/"

step "2. the wheel's tag, symbol versions, metadata and version; its libraries"
release_python=$("$root/scripts/python-env" --requirements "$root/python/requirements-release.txt" \
  --venv "$root/build/venv-release")
[[ $release_python == /* ]] || release_python="$root/$release_python"
"$python" "$root/tests/wheel/wheel_check.py" "$wheel" "$release_python" "$venv" ||
  fail "tests/wheel/wheel_check.py"
check() { "$python" "$root/tests/wheel/wheel_check.py" --foreign "$@"; }
check "$site/shardpack" "$site/shardpack.libs" > "$tmp/foreign" ||
  { cat "$tmp/foreign" >&2; fail "libraries resolved outside the wheel"; }
elves=$(find "$site/shardpack" "$site/shardpack.libs" -type f -exec sh -c \
  'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \; | wc -l)
(( elves >= 4 )) || fail "only $elves ELF files installed"
if check "$build/python/shardpack" > "$tmp/control"; then
  fail "the check passed the build tree's module, which links the system's libhdf5"
fi
grep -q 'libhdf5' "$tmp/control" || fail "the check did not name libhdf5 for the build tree"
echo "wheel_test: $elves ELF files, all resolved inside the wheel or to the base set" >&2

step "3. the tools on the venv's PATH"
export PATH="$venv/bin:$PATH"
[[ $(command -v shardpack) == "$venv/bin/shardpack" ]] || fail "shardpack is not the venv's"
"$build/datasets/make_demo_data" "$tmp/src" --cifar-records 600 --images-per-class 0 > /dev/null
shardpack cifar "$tmp/src/cifar/data_batch_1.bin" -o "$tmp/ds" -q
sharddump verify "$tmp/ds" >&2
shardbench "$tmp/ds" --batch-size 100 --epochs 1 --threads 1 > "$tmp/bench"
grep -q "600" "$tmp/bench" || { cat "$tmp/bench" >&2; fail "shardbench did not stream 600 samples"; }
set +e
sharddump verify "$tmp/no-such-dataset" 2> "$tmp/err"
status=$?
set -e
[[ $status == 1 ]] && grep -q "no-such-dataset" "$tmp/err" ||
  fail "a tool's error did not come through its launcher (status $status: $(cat "$tmp/err"))"

step "4. the Python suite against the installed package"
export SHARDPACK_TOOL="$venv/bin/shardpack" SHARDBENCH_TOOL="$venv/bin/shardbench"
export MAKE_DEMO_DATA="$build/datasets/make_demo_data" TRAIN_LOOP="$build/examples/train_loop"
export MAKE_FIELDS_DATASET="$build/tests/testing/make_fields_dataset"
export MAKE_BOX_DATASET="$build/tests/testing/make_box_dataset"
export SHARDPACK_EXAMPLES="$root/examples" OMP_NUM_THREADS=1
unset PYTHONPATH
# python_suite PYTHON SITE [PYTHONPATH]: every test script, under PYTHON, importing
# shardpack from SITE only.
python_suite() {
  local t status
  for t in "$root"/tests/python/*_test.py; do
    set +e
    (cd "$tmp" && SHARDPACK_EXPECT_INSTALLED="$2" PYTHONPATH="${3:-}" "$1" "$t") > "$tmp/log" 2>&1
    status=$?
    set -e
    case $status in
      0) echo "wheel_test: $(basename "$t") under $1: passed" >&2 ;;
      77) echo "wheel_test: $(basename "$t") under $1: skipped: $(grep -m1 SKIP "$tmp/log")" >&2 ;;
      *) cat "$tmp/log" >&2; fail "$(basename "$t") failed against the installed wheel ($1)" ;;
    esac
  done
}
python_suite "$venv/bin/python" "$site"

torch_python=$("$root/scripts/python-env")
[[ $torch_python == /* ]] || torch_python="$root/$torch_python"
"$torch_python" -m pip install -q --no-index --no-deps --target "$tmp/site-torch" "$wheel"
python_suite "$torch_python" "$tmp/site-torch" "$tmp/site-torch"

step "5. the sdist"
tar -tzf "$sdist" | sed 's|^[^/]*/||' | sort > "$tmp/sdist-files"
(cd "$root" && git ls-files | sort) > "$tmp/git-files"
missing=$(comm -13 "$tmp/sdist-files" "$tmp/git-files" | while read -r f; do
  [[ -e "$root/$f" ]] && echo "$f"; done)
[[ -z $missing ]] || fail "the sdist lacks: $missing"
extra=$(comm -23 "$tmp/sdist-files" "$tmp/git-files" | grep -v '/$' | grep -v '^$' | grep -vx 'PKG-INFO' || true)
[[ -z $extra ]] || fail "the sdist holds files git does not track: $extra"
grep -qx 'PKG-INFO' "$tmp/sdist-files" || fail "the sdist has no PKG-INFO"
mkdir "$tmp/sdist" && tar -xzf "$sdist" -C "$tmp/sdist"
cmake -S "$tmp"/sdist/shardpack-* -B "$tmp/sdist-build" -DSHARDPACK_WHEEL=ON \
  -DPython3_EXECUTABLE="$python" > "$tmp/sdist-configure" 2>&1 ||
  { cat "$tmp/sdist-configure" >&2; fail "CMake does not configure from the sdist"; }

step "6. pip uninstall leaves nothing behind"
"$venv/bin/pip" uninstall -q -y shardpack
(cd "$venv" && find . | sort) > "$tmp/after"
diff "$tmp/before" "$tmp/after" >&2 || fail "the venv differs after pip uninstall"
echo "wheel_test: ok" >&2
