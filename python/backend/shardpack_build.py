"""shardpack's PEP 517 build backend: CMake builds, shardpack_wheel packs.

pyproject.toml names this module through `backend-path` and requires nothing,
so `pip install .` builds offline in a fresh venv of any CPython 3.9 or newer:
the build needs nothing from a package index. It needs, from the system, CMake
3.25 or newer, a C++20 compiler and the C++ libraries of Debian's -dev packages
(scripts/setup installs them all, pybind11-dev among them); ninja when present.

The wheel holds the package `shardpack` (python/shardpack/*.py and the module
_shardpack), the three tools in shardpack/bin/ and console-script launchers
for them. It links the system's shared libraries: scripts/wheel then makes it
self-contained (shardpack_bundle.py).

Config settings (pip -C NAME=VALUE):
  build-dir=DIR           build in DIR and keep it (default: a temporary folder,
                          removed afterwards). A DIR this backend configured is
                          configured again for the Python running pip; any other
                          configured DIR (scripts/test's build/) is only built,
                          and its module must be for that Python.
  cmake.define.NAME=VALUE one -DNAME=VALUE for CMake (e.g. SHARDPACK_CUDA=OFF).
"""
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile

import shardpack_wheel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "shardpack"
SUMMARY = "Sharded image datasets streamed into training loops: pack, inspect, read"
MIN_CMAKE = (3, 25)
TOOLS = ("shardpack", "sharddump", "shardbench")
SETUP_HINT = ("Debian 12: scripts/setup installs everything the build needs "
              "(docs/python.md, 'Installing with pip')")


def _fail(message):
    """Ends the hook with one line that says what is missing and how to get it."""
    sys.stderr.write(f"shardpack build: {message}\n")
    raise SystemExit(1)


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(shardpack VERSION ([0-9][0-9.]*)", f.read())
    if not m:
        _fail(f"{ROOT}/CMakeLists.txt: no 'project(shardpack VERSION x.y.z)'")
    return m.group(1)


def _settings(config_settings):
    config_settings = config_settings or {}
    defines = []
    for key, value in config_settings.items():
        values = value if isinstance(value, list) else [value]
        if key.startswith("cmake.define."):
            defines += [f"-D{key[len('cmake.define.'):]}={v}" for v in values]
        elif key != "build-dir":
            _fail(f"unknown config setting '{key}': build-dir, cmake.define.NAME")
    build_dir = config_settings.get("build-dir")
    return (os.path.abspath(build_dir) if build_dir else None), defines


def _tag():
    if sys.implementation.name != "cpython":
        _fail(f"shardpack's module is built for CPython, not {sys.implementation.name}")
    version = f"{sys.version_info.major}{sys.version_info.minor}"
    abi = f"cp{version}" + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "")
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"cp{version}-{abi}-{platform}"


def _find_cmake():
    cmake = shutil.which("cmake")
    if cmake is None:
        _fail(f"CMake {MIN_CMAKE[0]}.{MIN_CMAKE[1]} or newer is needed and none is on PATH. "
              + SETUP_HINT)
    out = subprocess.run([cmake, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < MIN_CMAKE:
        found = m.group(0) if m else "an unknown version"
        _fail(f"{cmake} is {found}; CMake {MIN_CMAKE[0]}.{MIN_CMAKE[1]} or newer is needed. "
              + SETUP_HINT)
    return cmake


def _check_compiler():
    if os.environ.get("CXX") or any(shutil.which(c) for c in ("c++", "g++", "clang++")):
        return
    _fail("no C++ compiler: CXX is unset and none of c++, g++, clang++ is on PATH. "
          + SETUP_HINT)


def _run(args, what):
    sys.stderr.write("shardpack build: " + " ".join(args) + "\n")
    sys.stderr.flush()
    if subprocess.run(args, cwd=ROOT, stdout=sys.stderr).returncode != 0:
        hint = f" A missing library is a missing -dev package: {SETUP_HINT}." \
            if what == "configure" else ""
        _fail(f"CMake's {what} step failed; its messages are above.{hint}")


def _configure(cmake, build_dir, defines):
    args = [cmake, "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
            "-DSHARDPACK_WHEEL=ON", "-DSHARDPACK_PYTHON=ON",
            f"-DPython3_EXECUTABLE={sys.executable}"]
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    _run(args + defines, "configure")


def _wheel_build(build_dir):
    """None: `build_dir` is not configured; True: configured by this backend; False: another build."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
            return "SHARDPACK_WHEEL:BOOL=ON\n" in f.read()
    except FileNotFoundError:
        return None


def _announce(build_dir, temporary, jobs):
    """Says, before the long step, what is built, for how long and how to see it move.

    pip shows a hook's output only with -v, so without it the line also goes to the
    terminal (/dev/tty) when there is one: else `pip install .` is silent for minutes."""
    reuse = ("a fresh temporary build folder (a full build; `-C build-dir=DIR` keeps one "
             "for the next install)" if temporary else f"{build_dir} (only what changed)")
    line = (f"shardpack build: compiling the C++ library, the Python module and the three "
            f"tools with {jobs} jobs in {reuse}; from scratch this takes many minutes (17 on 2 "
            f"busy cores). `pip install -v .` shows CMake's progress.\n")
    sys.stderr.write(line)
    sys.stderr.flush()
    if sys.stderr.isatty():
        return
    try:
        with open("/dev/tty", "w", encoding="utf-8") as tty:
            tty.write("\n" + line)
    except OSError:
        pass  # no terminal (CI, a pipe): the line is in the captured output


def _stage(cmake, build_dir, stage, temporary=False):
    """Builds the tools and the module and installs the component 'wheel' into `stage`."""
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    _announce(build_dir, temporary, jobs)
    _run([cmake, "--build", build_dir, "-j", jobs, "--target", "shardpack_python", *TOOLS],
         "build")
    _run([cmake, "--install", build_dir, "--component", "wheel", "--prefix", stage, "--strip"],
         "install")
    module = "_shardpack" + sysconfig.get_config_var("EXT_SUFFIX")
    built = [n for n in os.listdir(os.path.join(stage, NAME)) if n.startswith("_shardpack")]
    if built != [module]:
        _fail(f"{build_dir} built {', '.join(built) or 'no module'}, not {module} for "
              f"{sys.executable}: give this Python a build dir of its own")


def _metadata(version):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.9\nProvides-Extra: numpy\n"
            'Requires-Dist: numpy; extra == "numpy"\n'
            # shardpack parquet: the pyarrow API it uses (ParquetFile,
            # iter_batches, pyarrow.types) is that of every pyarrow since
            # 14; the tests run the one tests/python/requirements-torch.txt pins.
            "Provides-Extra: parquet\n"
            'Requires-Dist: pyarrow>=14; extra == "parquet"\n'
            f"Description-Content-Type: text/markdown\n\n{readme}")


def _write_dist_info(stage, version, tag):
    dist_info = f"{NAME}-{version}.dist-info"
    folder = os.path.join(stage, dist_info)
    os.makedirs(folder)
    scripts = "".join(f"{t} = shardpack._tools:{t}\n" for t in TOOLS)
    files = {
        "METADATA": _metadata(version),
        "WHEEL": (f"Wheel-Version: 1.0\nGenerator: shardpack_build {version}\n"
                  f"Root-Is-Purelib: false\nTag: {tag}\n"),
        "entry_points.txt": f"[console_scripts]\n{scripts}",
        "top_level.txt": f"{NAME}\n",
    }
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)
    return dist_info


# PEP 517 hooks --------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """The metadata without the build: pip asks first, and would otherwise build the
    whole wheel under "Preparing metadata"."""
    _settings(config_settings)
    return _write_dist_info(metadata_directory, _version(), _tag())


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build_dir, defines = _settings(config_settings)
    version, tag = _version(), _tag()
    cmake = _find_cmake()
    _check_compiler()
    temporary = build_dir is None
    if temporary:
        build_dir = tempfile.mkdtemp(prefix="shardpack-build-")
    stage = tempfile.mkdtemp(prefix="shardpack-wheel-")
    try:
        # A folder this backend configured is configured again for this Python
        # (the venv that made it may be gone); any other build is only built.
        if _wheel_build(build_dir) in (None, True):
            _configure(cmake, build_dir, defines)
        elif defines:
            _fail(f"{build_dir} is not a wheel build: cmake.define settings would be lost")
        _stage(cmake, build_dir, stage, temporary)
        dist_info = _write_dist_info(stage, version, tag)
        name = f"{NAME}-{version}-{tag}.whl"
        os.makedirs(wheel_directory, exist_ok=True)
        shardpack_wheel.pack(stage, dist_info, os.path.join(wheel_directory, name))
        return name
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if temporary:
            shutil.rmtree(build_dir, ignore_errors=True)


# An sdist lists its files here (one path a line, beside PKG-INFO), so that an
# sdist built again from the unpacked one holds the same files.
SDIST_FILES = "SDIST-FILES"


def _source_files():
    """The files an sdist holds, exactly: in an unpacked sdist, the ones its SDIST-FILES
    lists; in a git checkout, the files git tracks (never untracked ones, ignored or
    not). Anywhere else there is no list to trust, and the hook fails."""
    listed = os.path.join(ROOT, SDIST_FILES)
    if os.path.isfile(listed):
        with open(listed, encoding="utf-8", errors="surrogateescape") as f:
            files = [line for line in f.read().split("\n") if line]
        missing = [p for p in files if not os.path.lexists(os.path.join(ROOT, p))]
        if missing:
            _fail(f"{listed} names {len(missing)} files that are not there, "
                  f"'{missing[0]}' first: this is not a whole sdist")
        return sorted(files)
    if not os.path.exists(os.path.join(ROOT, ".git")):
        _fail(f"{ROOT} is neither a git checkout nor an unpacked sdist (no .git, no "
              f"{SDIST_FILES}): an sdist is built from a git checkout (the files git tracks)")
    if shutil.which("git") is None:
        _fail(f"{ROOT} is a git checkout and git is not on PATH: the sdist holds the files "
              "git tracks")
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached"], capture_output=True)
    if out.returncode != 0:
        _fail(f"git ls-files in {ROOT}: "
              + (out.stderr.decode("utf-8", "replace").strip().splitlines() or ["failed"])[0])
    files = [p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
    # A tracked file deleted in the work tree, or a submodule (a folder), is not shipped.
    return sorted(p for p in files
                  if os.path.isfile(os.path.join(ROOT, p)) or
                  os.path.islink(os.path.join(ROOT, p)))


def build_sdist(sdist_directory, config_settings=None):
    """The sdist: _source_files(), PKG-INFO and SDIST-FILES under shardpack-VERSION/,
    written through shardpack_wheel.replacing() (no link in the folder is followed)."""
    version = _version()
    base = f"{NAME}-{version}"
    name = f"{base}.tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, name)

    def normalized(info):
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    def add_text(tar, rel, text):
        data = text.encode("utf-8", "surrogateescape")
        info = normalized(tarfile.TarInfo(f"{base}/{rel}"))
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    files = [p for p in _source_files() if p not in ("PKG-INFO", SDIST_FILES)]
    for rel in files:
        if "\n" in rel:
            _fail(f"{ROOT}: the file name {rel!r} holds a newline, which {SDIST_FILES} "
                  "cannot list")
    with shardpack_wheel.replacing(path) as out:
        with tarfile.open(name, "w:gz", fileobj=out, format=tarfile.PAX_FORMAT) as tar:
            for rel in files:
                tar.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}", recursive=False,
                        filter=normalized)
            add_text(tar, "PKG-INFO", _metadata(version))
            add_text(tar, SDIST_FILES, "".join(f"{p}\n" for p in files))
    return name
