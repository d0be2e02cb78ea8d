"""The wheel scripts/wheel made, as PyPI and a user's machine see it.

    wheel_check.py WHEEL RELEASE_PYTHON VENV   the checks below (unittest)
    wheel_check.py --foreign DIR...            list every ELF file under DIR whose
                                               libraries resolve outside DIR and the
                                               manylinux base set; exit 1 if any

WHEEL: the repaired wheel; RELEASE_PYTHON: the Python of build/venv-release
(auditwheel); VENV: a venv with WHEEL installed. Run by wheel_test.sh: the tag
is manylinux_2_34 and `auditwheel show` agrees; no ELF file asks for a glibc
or C++ runtime symbol version newer than that policy allows; the metadata has
the extras and the three tools; the wheel's version, shardpack.__version__ and
each tool's --version are CMakeLists.txt's project VERSION; nothing links or
bundles a CUDA library, and the module carries the driver's name and, where
nvcc built it, the finish kernel.
"""
import email.parser
import os
import re
import subprocess
import sys
import unittest
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = ("shardpack", "sharddump", "shardbench")
TAG = "manylinux_2_34_x86_64"
# manylinux_2_34's ceilings (auditwheel's policy): glibc 2.34 (RHEL 9, Ubuntu
# 22.04), libstdc++ of GCC 11 (GLIBCXX_3.4.29, CXXABI_1.3.13), libgcc_s GCC_7.0.0.
CEILINGS = {"GLIBC": (2, 34), "GLIBCXX": (3, 4, 29), "CXXABI": (1, 3, 13), "GCC": (7, 0, 0)}
# What a manylinux wheel may take from the machine (the policy's lib_whitelist
# that concerns us, and the loader and vDSO that ldd lists).
BASE = re.compile(r"^(linux-vdso|ld-linux[-\w.]*|libc|libm|libmvec|libpthread|libdl|librt|"
                  r"libutil|libresolv|libanl|libnsl|libstdc\+\+|libgcc_s|libz|libexpat|"
                  r"libatomic)\.so(\.[\d.]+)?$")


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(shardpack VERSION ([0-9.]+)", f.read()).group(1)


def elf_files(root):
    found = []
    for folder, _, names in os.walk(root):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        found.append(path)
    return sorted(found)


def ldd(path):
    """{soname: resolved path or None}, with LD_LIBRARY_PATH unset."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run(["ldd", path], capture_output=True, text=True, env=env, check=True)
    deps = {}
    for line in out.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (not found|(\S+) \(0x[0-9a-f]+\))", line)
        if m:
            deps[m.group(1)] = m.group(3)
        elif re.match(r"\s*(\S+) \(0x[0-9a-f]+\)", line):
            name = line.split()[0]
            deps[os.path.basename(name)] = name
    return deps


def foreign(roots):
    """[(file, soname, where)]: what an ELF file under `roots` takes from outside
    them that is not in the base set, or does not find."""
    roots = [os.path.realpath(r) for r in roots]
    bad = []
    for path in [p for r in roots for p in elf_files(r)]:
        for soname, resolved in ldd(path).items():
            where = os.path.realpath(resolved) if resolved else ""
            if not any(where.startswith(r + os.sep) for r in roots) and not BASE.match(soname):
                bad.append((path, soname, resolved or "not found"))
    return bad


def version_needs(path):
    """{(name, version tuple)} of the symbol versions `path` asks for (objdump -T's
    undefined symbols), e.g. ("GLIBC", (2, 34))."""
    out = subprocess.run(["objdump", "-T", path], capture_output=True, text=True,
                         check=True).stdout
    needs = set()
    for line in out.splitlines():
        m = re.search(r"\*UND\*\s+\S+\s+(?:\(?)(GLIBC|GLIBCXX|CXXABI|GCC)_([\d.]+)", line)
        if m:
            needs.add((m.group(1), tuple(int(x) for x in m.group(2).split("."))))
    return needs


class Wheel(unittest.TestCase):
    wheel = release_python = venv = None

    @classmethod
    def setUpClass(cls):
        cls.tree = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"wheel-check-{os.getpid()}")
        with zipfile.ZipFile(cls.wheel) as zf:
            zf.extractall(cls.tree)
            cls.names = zf.namelist()
            dist_info = next(n.split("/")[0] for n in cls.names
                             if n.split("/")[0].endswith(".dist-info"))
            cls.metadata = email.parser.Parser().parsestr(
                zf.read(f"{dist_info}/METADATA").decode())
            cls.wheel_file = zf.read(f"{dist_info}/WHEEL").decode()
            cls.entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", cls.tree], check=True)

    def test_the_tag_is_manylinux_2_34(self):
        self.assertTrue(os.path.basename(self.wheel).endswith(f"-{TAG}.whl"), self.wheel)
        tags = re.findall(r"^Tag: (.*)$", self.wheel_file, re.M)
        self.assertTrue(tags and all(t.endswith(f"-{TAG}") for t in tags), self.wheel_file)

    def test_auditwheel_show_accepts_it(self):
        out = subprocess.run([self.release_python, "-m", "auditwheel", "show", self.wheel],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        text = " ".join(out.stdout.split())
        m = re.search(r'consistent with the following platform tag: "manylinux_2_(\d+)_x86_64"',
                      text)
        self.assertIsNotNone(m, out.stdout)
        self.assertLessEqual(int(m.group(1)), 34, out.stdout)
        self.assertNotIn("is not consistent", text)

    def test_no_symbol_version_above_the_policy(self):
        files = elf_files(self.tree)
        self.assertGreaterEqual(len(files), 4)
        for path in files:
            for name, version in version_needs(path):
                self.assertLessEqual(version, CEILINGS[name],
                                     f"{path} needs {name}_{'.'.join(map(str, version))}")

    def test_our_files_carry_their_own_cxx_runtime(self):
        # -static-libstdc++ -static-libgcc (CMakeLists.txt, SHARDPACK_WHEEL)
        ours = elf_files(os.path.join(self.tree, "shardpack"))
        self.assertEqual(len(ours), 1 + len(TOOLS), ours)
        for path in ours:
            self.assertFalse({n for n, _ in version_needs(path)} & {"GLIBCXX", "CXXABI"}, path)

    def test_every_library_is_bundled_or_in_the_base_set(self):
        self.assertEqual(foreign([self.tree]), [])
        libs = [n for n in self.names if n.startswith("shardpack.libs/")]
        self.assertTrue(libs)
        self.assertFalse([n for n in libs if "libstdc++" in n or "libgcc_s" in n], libs)

    def test_no_cuda_library_is_linked_or_bundled(self):
        # One wheel for CPU and GPU machines: the driver is dlopen'ed when a
        # device is asked for (docs/reader.md, "The driver, loaded at run time").
        self.assertFalse([n for n in self.names if re.search(r"/lib(cuda|cudart|nvrtc)\b", n)])
        for path in elf_files(self.tree):
            needed = subprocess.run(["objdump", "-p", path], capture_output=True, text=True,
                                    check=True).stdout
            self.assertNotRegex(needed, r"NEEDED\s+lib(cuda|cudart|nvrtc)\b", path)
        module = next(p for p in elf_files(os.path.join(self.tree, "shardpack"))
                      if p.endswith(".so"))
        with open(module, "rb") as f:
            image = f.read()
        self.assertIn(b"libcuda.so.1", image)
        if os.path.exists("/usr/local/cuda/bin/nvcc"):  # built with the finish kernel
            self.assertIn(b"shardpack_finish_f16_nchw", image)

    def test_metadata_extras_and_tools(self):
        self.assertEqual(self.metadata["Name"], "shardpack")
        self.assertEqual(self.metadata["Requires-Python"], ">=3.9")
        extras = self.metadata.get_all("Provides-Extra")
        self.assertEqual(sorted(extras), ["numpy", "parquet", "ray", "spark"])
        requires = [" ".join(r.split()) for r in self.metadata.get_all("Requires-Dist")]
        self.assertIn('pyarrow>=14; extra == "parquet"', requires)
        self.assertIn('numpy; extra == "numpy"', requires)
        self.assertIn('ray[data]>=2.52; extra == "ray"', requires)
        self.assertIn('pyspark>=4.0; extra == "spark"', requires)
        self.assertIn('pyarrow>=11; extra == "spark"', requires)
        for tool in TOOLS:
            self.assertRegex(self.entry_points, rf"(?m)^{tool} = shardpack\._tools:{tool}$")

    def test_one_version_everywhere(self):
        version = cmake_version()
        self.assertEqual(self.metadata["Version"], version)
        self.assertIn(f"shardpack-{version}-", os.path.basename(self.wheel))
        python = os.path.join(self.venv, "bin", "python")
        out = subprocess.run([python, "-c", "import shardpack; print(shardpack.__version__)"],
                             capture_output=True, text=True, cwd="/")
        self.assertEqual(out.stdout.strip(), version, out.stderr)
        for tool in TOOLS:
            out = subprocess.run([os.path.join(self.venv, "bin", tool), "--version"],
                                 capture_output=True, text=True)
            self.assertEqual(out.stdout.strip(), f"{tool} {version}", out.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--foreign"]:
        bad = foreign(sys.argv[2:])
        for f, s, w in bad:
            print(f"{f}: {s} -> {w}")
        sys.exit(1 if bad else 0)
    Wheel.wheel, Wheel.release_python, Wheel.venv = sys.argv[1:4]
    unittest.main(argv=sys.argv[:1] + sys.argv[4:])
