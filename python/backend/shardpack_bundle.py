#!/usr/bin/env python3
"""Makes a shardpack wheel self-contained, as auditwheel's repair does.

    shardpack_bundle.py WHEEL [-w DIR]   bundle: write the repaired wheel into DIR
    shardpack_bundle.py --check DIR...   list every ELF file under DIR whose
                                         libraries resolve outside DIR and the base set

A wheel built on one machine links that machine's shared libraries (libhdf5,
liblmdb, libturbojpeg, absl, ... and theirs). The bundler copies every library
the wheel's ELF files need, found by `ldd`, except the base set every Linux
has (glibc's libraries, libstdc++, libgcc_s), into shardpack.libs/ in the
wheel. Each copy gets a name of its own, `libNAME-<8 hex of its sha256>.so.N`,
as its SONAME and in every DT_NEEDED that named it, so a library of the same
name already loaded in the process (torch's, the system's) is never taken for
it; each ELF file finds the copies through a RUNPATH relative to itself
($ORIGIN). Needs patchelf (Debian: patchelf) and ldd.
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

import shardpack_wheel

LIBS_DIR = "shardpack.libs"

# The base set: what the wheel may take from the machine it runs on. glibc's
# libraries, the dynamic loader, the kernel's vDSO, the C++ runtime, and the
# GPU driver's libcuda (loaded by libcudart at run time, never bundled).
BASE = re.compile(r"^(linux-vdso|linux-gate|ld-linux[-\w.]*|libc|libm|libmvec|libpthread|libdl|"
                  r"librt|libutil|libresolv|libanl|libnsl|libBrokenLocale|libthread_db|"
                  r"libc_malloc_debug|libnss_\w+|libstdc\+\+|libgcc_s|libcuda)\.so(\.[\d.]+)?$")


def is_base(soname):
    return BASE.match(soname) is not None


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def elf_files(root):
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path) and is_elf(path):
                found.append(path)
    return sorted(found)


def ldd(path):
    """{soname: resolved path or None} for everything `path` loads, as this machine sees it.

    Run without LD_LIBRARY_PATH, so only the files' own RUNPATHs and the system's
    search path count.
    """
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run(["ldd", path], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"ldd {path}: {out.stderr.strip() or out.stdout.strip()}")
    deps = {}
    for line in out.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (not found|(\S+) \(0x[0-9a-f]+\))", line)
        if m:
            deps[m.group(1)] = m.group(3)
            continue
        m = re.match(r"\s*(\S+) \(0x[0-9a-f]+\)", line)  # the vDSO, the loader
        if m:
            deps[os.path.basename(m.group(1))] = m.group(1)
    return deps


def needed(path):
    out = subprocess.run(["patchelf", "--print-needed", path], capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def patchelf(path, *args):
    subprocess.run(["patchelf", *args, path], check=True)


def bundled_name(soname, path):
    """libfoo.so.1.2 -> libfoo-<8 hex of the file's sha256>.so.1.2"""
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:8]
    stem, dot, rest = soname.partition(".so")
    return f"{stem}-{digest}{dot}{rest}"


def bundle_tree(root):
    """Copies every non-base library the ELF files under `root` need into
    root/shardpack.libs and points the files at the copies. Returns {soname: copy name}."""
    if shutil.which("patchelf") is None:
        raise SystemExit("shardpack_bundle: patchelf is needed (Debian: apt-get install patchelf)")
    own = elf_files(root)
    libs = {}  # soname -> the machine's file
    for path in own:
        for soname, resolved in ldd(path).items():
            if is_base(soname):
                continue
            if resolved is None:
                raise SystemExit(f"shardpack_bundle: {path} needs {soname}, which is not found")
            libs[soname] = resolved
    libs_dir = os.path.join(root, LIBS_DIR)
    os.makedirs(libs_dir, exist_ok=True)
    renamed = {soname: bundled_name(soname, p) for soname, p in libs.items()}
    copies = []
    for soname, source in sorted(libs.items()):
        copy = os.path.join(libs_dir, renamed[soname])
        shutil.copyfile(source, copy)
        os.chmod(copy, 0o755)
        patchelf(copy, "--set-soname", renamed[soname])
        copies.append(copy)
    for path in own + copies:
        swaps = []
        for soname in needed(path):
            if soname in renamed:
                swaps += ["--replace-needed", soname, renamed[soname]]
        rpath = "$ORIGIN/" + os.path.relpath(libs_dir, os.path.dirname(path))
        if os.path.dirname(path) == libs_dir:
            rpath = "$ORIGIN"
        # Two runs: patchelf 0.14 (Debian 12's) given --replace-needed and
        # --set-rpath at once changes the version needs but not DT_NEEDED.
        if swaps:
            patchelf(path, *swaps)
        patchelf(path, "--set-rpath", rpath)
    return renamed


def foreign_libraries(roots):
    """[(file, soname, where)] for every library an ELF file under the folders `roots`
    takes from outside them that is not in the base set, or does not find at all."""
    roots = [os.path.realpath(r) for r in roots]
    bad = []
    for path in [p for r in roots for p in elf_files(r)]:
        for soname, resolved in ldd(path).items():
            where = os.path.realpath(resolved) if resolved else ""
            inside = any(where.startswith(r + os.sep) for r in roots)
            if not inside and not is_base(soname):
                bad.append((path, soname, resolved or "not found"))
    return bad


def base_versions(root):
    """The newest glibc and libstdc++ symbol versions the ELF files under `root` need:
    what a machine must have to run the wheel, e.g. ('2.34', '3.4.30')."""
    found = {"GLIBC": [], "GLIBCXX": []}
    for path in elf_files(root):
        out = subprocess.run(["objdump", "-T", path], capture_output=True, text=True).stdout
        for name, version in re.findall(r"\b(GLIBC|GLIBCXX)_([\d.]+)\b", out):
            found[name].append(tuple(int(x) for x in version.split(".")))
    return tuple(".".join(map(str, max(v))) if v else "none"
                 for v in (found["GLIBC"], found["GLIBCXX"]))


def bundle_wheel(wheel, out_dir):
    work = tempfile.mkdtemp(prefix="shardpack-bundle-")
    try:
        tree = os.path.join(work, "tree")
        dist_info = shardpack_wheel.unpack(wheel, tree)
        renamed = bundle_tree(tree)
        bad = foreign_libraries([tree])
        if bad:
            lines = "\n".join(f"  {f}: {s} -> {w}" for f, s, w in bad)
            raise SystemExit(f"shardpack_bundle: still outside the wheel:\n{lines}")
        glibc, glibcxx = base_versions(tree)
        os.makedirs(out_dir, exist_ok=True)
        out = os.path.join(out_dir, os.path.basename(wheel))
        shardpack_wheel.pack(tree, dist_info, out)
        print(f"{out}: {len(renamed)} libraries bundled in {LIBS_DIR}/; it needs glibc "
              f">= {glibc} and libstdc++ with GLIBCXX_{glibcxx}", file=sys.stderr)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="+", metavar="WHEEL|DIR")
    p.add_argument("-w", "--wheel-dir", default="wheelhouse",
                   help="where the bundled wheel goes (default: wheelhouse)")
    p.add_argument("--check", action="store_true",
                   help="check installed or unpacked trees instead of bundling")
    args = p.parse_args()
    if args.check:
        bad = foreign_libraries(args.paths)
        for f, s, w in bad:
            print(f"{f}: {s} -> {w}")
        sys.exit(1 if bad else 0)
    for wheel in args.paths:
        bundle_wheel(wheel, args.wheel_dir)


if __name__ == "__main__":
    main()
