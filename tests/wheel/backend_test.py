"""The build backend and the wheel files, without building anything.

What a user without CMake or a compiler sees, config settings pip passes,
the wheels and sdists the backend writes (exactly the tracked files; links
planted in the output folder are not followed), and wheels that lie (a member
that leaves the tree, two .dist-info folders). tests/wheel/wheel_test.sh
builds, bundles and installs the real wheel.
"""
import base64
import hashlib
import os
import shutil
import stat
import sysconfig
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BACKEND = os.path.join(ROOT, "python", "backend")
sys.path.insert(0, BACKEND)
import shardpack_bundle  # noqa: E402
import shardpack_wheel  # noqa: E402


def hook(name, *args, path=None, env=None, root=ROOT, new_session=False):
    """Runs a PEP 517 hook of the backend in `root` (its python/backend) in a fresh
    Python, as pip does (in a session of its own, without a terminal, with `new_session`)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import shardpack_build as b; "
            f"print(b.{name}(*sys.argv[2:3], **eval(sys.argv[3])))")
    full_env = {k: v for k, v in os.environ.items() if k != "CXX"}
    if path is not None:
        full_env["PATH"] = path
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code, os.path.join(root, "python", "backend"),
                           *args], capture_output=True, text=True, env=full_env, cwd=root,
                          start_new_session=new_session)


def plant_links(folder, names):
    """Links named `names` in `folder` to one file outside it; returns that file, whose
    bytes must stay b"target\n" whatever is written in `folder`."""
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(os.path.dirname(folder), "target")
    with open(target, "wb") as f:
        f.write(b"target\n")
    for name in names:
        os.symlink(target, os.path.join(folder, name))
    return target


def fake_tools(tmp, tools):
    """A folder for PATH holding only the commands `tools`: {name: shell script body}."""
    path = os.path.join(tmp, "bin")
    os.makedirs(path, exist_ok=True)
    for name, body in tools.items():
        exe = os.path.join(path, name)
        with open(exe, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(exe, 0o755)
    return path


class MissingTools(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.out = os.path.join(self.tmp, "wheels")

    def build(self, tools, env=None, settings="{}"):
        return hook("build_wheel", self.out, f"{{'config_settings': {settings}}}",
                    path=fake_tools(self.tmp, tools), env=env)

    def test_no_cmake_is_named_with_the_way_to_get_it(self):
        p = self.build({})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("CMake 3.25 or newer is needed and none is on PATH", p.stderr)
        self.assertIn("scripts/setup", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_an_old_cmake_is_named_with_its_version(self):
        p = self.build({"cmake": 'echo "cmake version 3.18.4"'})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("is version 3.18; CMake 3.25 or newer is needed", p.stderr)

    def test_no_compiler_is_named(self):
        p = self.build({"cmake": 'echo "cmake version 3.25.1"'})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("no C++ compiler: CXX is unset and none of c++, g++, clang++ is on PATH",
                      p.stderr)

    def test_an_unknown_setting_is_refused_by_name(self):
        p = self.build({}, settings="{'build_dir': 'x'}")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("unknown config setting 'build_dir'", p.stderr)

    def test_a_failed_configure_says_where_libraries_come_from(self):
        tools = {"cmake": 'case "$1" in --version) echo "cmake version 3.25.1";; '
                          '*) echo "Could not find absl" >&2; exit 1;; esac',
                 "c++": "true"}
        p = self.build(tools)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("Could not find absl", p.stderr)
        self.assertIn("CMake's configure step failed", p.stderr)
        self.assertIn("missing -dev package", p.stderr)
        self.assertFalse(os.path.exists(self.out) and os.listdir(self.out), "a wheel was left")

    def test_the_build_is_announced_before_it_starts(self):
        # pip install . was silent for the whole build: the line says what is built,
        # where, that it takes minutes and how to see its progress.
        tools = {"cmake": 'case "$1" in --version) echo "cmake version 3.25.1";; '
                          '--build) exit 1;; esac',
                 "c++": "true"}
        for settings, where in (("{}", "a fresh temporary build folder"),
                                (f"{{'build-dir': '{self.tmp}/kept'}}",
                                 f"{self.tmp}/kept (only what changed)")):
            p = hook("build_wheel", self.out, f"{{'config_settings': {settings}}}",
                     path=fake_tools(self.tmp, tools), new_session=True)
            self.assertEqual(p.returncode, 1, p.stderr)
            said = p.stderr.find("shardpack build: compiling the C++ library")
            self.assertGreaterEqual(said, 0, p.stderr)
            self.assertLess(said, p.stderr.find("CMake's build step failed"))
            line = p.stderr[said:].splitlines()[0]
            self.assertIn(where, line)
            self.assertIn("takes many minutes", line)
            self.assertIn("`pip install -v .` shows CMake's progress", line)

    def test_metadata_comes_without_a_build(self):
        p = hook("prepare_metadata_for_build_wheel", self.tmp, "{}", path=fake_tools(self.tmp, {}))
        self.assertEqual(p.returncode, 0, p.stderr)
        dist_info = p.stdout.strip()
        self.assertRegex(dist_info, r"^shardpack-[0-9.]+\.dist-info$")
        with open(os.path.join(self.tmp, dist_info, "METADATA"), encoding="utf-8") as f:
            metadata = f.read()
        self.assertIn("Name: shardpack\n", metadata)
        # what `shardpack parquet` tells a user to install
        self.assertIn("Provides-Extra: parquet\n", metadata)
        self.assertIn('Requires-Dist: pyarrow>=14; extra == "parquet"\n', metadata)
        self.assertTrue(os.path.exists(os.path.join(self.tmp, dist_info, "entry_points.txt")))

    def test_requirements_are_empty(self):
        for name in ("get_requires_for_build_wheel", "get_requires_for_build_sdist"):
            p = hook(name, "{}", "{}")
            self.assertEqual(p.stdout.strip(), "[]", p.stderr)


class Sdist(unittest.TestCase):
    def test_every_tracked_file_and_pkg_info(self):
        out = tempfile.mkdtemp()
        p = hook("build_sdist", out, "{}")
        self.assertEqual(p.returncode, 0, p.stderr)
        name = p.stdout.strip()
        with tarfile.open(os.path.join(out, name)) as tar:
            members = {m.name.split("/", 1)[1] for m in tar.getmembers()}
            self.assertTrue(all(m.name.startswith(name[:-len(".tar.gz")] + "/")
                                for m in tar.getmembers()))
            pkg_info = tar.extractfile(name[:-len(".tar.gz")] + "/PKG-INFO").read().decode()
        tracked = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True,
                                 text=True).stdout.split()
        tracked = [t for t in tracked if os.path.isfile(os.path.join(ROOT, t))]
        self.assertGreater(len(tracked), 100)
        self.assertEqual([t for t in tracked if t not in members], [])
        self.assertFalse(any(m.startswith("build/") for m in members))
        self.assertIn("Name: shardpack\n", pkg_info)
        self.assertIn("Requires-Python: >=3.9\n", pkg_info)


def members(sdist):
    with tarfile.open(sdist) as tar:
        return sorted(m.name.split("/", 1)[1] for m in tar.getmembers())


def git(root, *args):
    subprocess.run(["git", "-C", root, "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


class SdistFiles(unittest.TestCase):
    """A small checkout holding the backend: what its sdist holds, and the sdist's sdist."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.root = os.path.join(self.tmp, "checkout")
        shutil.copytree(BACKEND, os.path.join(self.root, "python", "backend"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        for rel, text in (("CMakeLists.txt", "project(shardpack VERSION 0.0.1)\n"),
                          ("README.md", "# shardpack\n"), (".gitignore", "ignored.txt\n"),
                          ("src/a.cc", "int a;\n")):
            os.makedirs(os.path.dirname(os.path.join(self.root, rel)), exist_ok=True)
            with open(os.path.join(self.root, rel), "w") as f:
                f.write(text)
        git(self.root, "init", "-q")
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "x")
        self.tracked = sorted(subprocess.run(["git", "-C", self.root, "ls-files"],
                                             capture_output=True, text=True).stdout.split())

    def sdist(self, root, out):
        p = hook("build_sdist", out, "{}", root=root)
        self.assertEqual(p.returncode, 0, p.stderr)
        return os.path.join(out, p.stdout.strip())

    def test_untracked_files_are_not_shipped(self):
        for rel in ("notes.txt", "src/scratch.cc", "ignored.txt"):
            with open(os.path.join(self.root, rel), "w") as f:
                f.write("not for the sdist\n")
        sdist = self.sdist(self.root, os.path.join(self.tmp, "out"))
        self.assertEqual(members(sdist), sorted(self.tracked + ["PKG-INFO", "SDIST-FILES"]))

    def test_an_unpacked_sdist_ships_its_own_list(self):
        sdist = self.sdist(self.root, os.path.join(self.tmp, "out"))
        with tarfile.open(sdist) as tar:
            tar.extractall(os.path.join(self.tmp, "unpacked"))
        unpacked = os.path.join(self.tmp, "unpacked", "shardpack-0.0.1")
        with open(os.path.join(unpacked, "stray.txt"), "w") as f:
            f.write("not for the sdist\n")
        again = self.sdist(unpacked, os.path.join(self.tmp, "again"))
        self.assertEqual(members(again), members(sdist))

    def test_an_unpacked_sdist_missing_a_file_is_refused(self):
        sdist = self.sdist(self.root, os.path.join(self.tmp, "out"))
        with tarfile.open(sdist) as tar:
            tar.extractall(os.path.join(self.tmp, "unpacked"))
        unpacked = os.path.join(self.tmp, "unpacked", "shardpack-0.0.1")
        os.remove(os.path.join(unpacked, "src", "a.cc"))
        p = hook("build_sdist", os.path.join(self.tmp, "again"), "{}", root=unpacked)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("names 1 files that are not there, 'src/a.cc' first", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_a_tree_that_is_neither_checkout_nor_sdist_is_refused(self):
        shutil.rmtree(os.path.join(self.root, ".git"))
        p = hook("build_sdist", os.path.join(self.tmp, "out"), "{}", root=self.root)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("is neither a git checkout nor an unpacked sdist", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_links_at_the_sdist_names_are_not_followed(self):
        out = os.path.join(self.tmp, "out")
        name = "shardpack-0.0.1.tar.gz"
        target = plant_links(out, [name + ".partial", name, "." + name])
        sdist = self.sdist(self.root, out)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b"target\n")
        self.assertFalse(os.path.islink(sdist))
        self.assertIn("SDIST-FILES", members(sdist))
        self.assertEqual(sorted(os.listdir(out)), sorted([name, name + ".partial", "." + name]))


class BuildWheelLinks(unittest.TestCase):
    def test_links_at_the_wheel_names_are_not_followed(self):
        # A cmake that "installs" a module: build_wheel runs end to end, compiling nothing.
        tmp = tempfile.mkdtemp()
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        cmake = ('case "$1" in --version) echo "cmake version 3.25.1";; '
                 '--install) while [ $# -gt 0 ]; do [ "$1" = --prefix ] && prefix=$2; shift; '
                 'done; mkdir -p "$prefix/shardpack" && '
                 f'echo module > "$prefix/shardpack/_shardpack{suffix}";; esac')
        path = fake_tools(tmp, {"cmake": cmake, "c++": "true"}) + ":/usr/bin:/bin"
        import shardpack_build
        name = f"shardpack-{shardpack_build._version()}-{shardpack_build._tag()}.whl"
        out = os.path.join(tmp, "wheels")
        target = plant_links(out, [name + ".partial", name])
        p = hook("build_wheel", out, "{}", path=path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), name)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b"target\n")
        self.assertFalse(os.path.islink(os.path.join(out, name)))
        with zipfile.ZipFile(os.path.join(out, name)) as zf:
            self.assertIn(f"shardpack/_shardpack{suffix}", zf.namelist())
        self.assertEqual(sorted(os.listdir(out)), sorted([name, name + ".partial"]))


class WheelFiles(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tree(self):
        root = os.path.join(self.tmp, "tree")
        os.makedirs(os.path.join(root, "pkg", "bin"))
        os.makedirs(os.path.join(root, "pkg-1.dist-info"))
        for rel, data, mode in (("pkg/__init__.py", b"x = 1\n", 0o644),
                                ("pkg/bin/tool", b"#!/bin/sh\n", 0o755),
                                ("pkg-1.dist-info/METADATA", b"Name: pkg\n", 0o644)):
            with open(os.path.join(root, rel), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(root, rel), mode)
        return root

    def test_record_hashes_modes_and_order(self):
        wheel = os.path.join(self.tmp, "pkg-1-py3-none-any.whl")
        shardpack_wheel.pack(self.tree(), "pkg-1.dist-info", wheel)
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
            self.assertEqual(names[-1], "pkg-1.dist-info/RECORD")
            self.assertTrue(names.index("pkg/bin/tool") < names.index("pkg-1.dist-info/METADATA"))
            record = zf.read("pkg-1.dist-info/RECORD").decode().splitlines()
            for line in record[:-1]:
                path, digest, size = line.split(",")
                data = zf.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                self.assertEqual(digest, "sha256=" + want.decode())
                self.assertEqual(int(size), len(data))
            self.assertEqual(record[-1], "pkg-1.dist-info/RECORD,,")
            mode = zf.getinfo("pkg/bin/tool").external_attr >> 16
            self.assertTrue(mode & stat.S_IXUSR, oct(mode))
        back = os.path.join(self.tmp, "back")
        self.assertEqual(shardpack_wheel.unpack(wheel, back), "pkg-1.dist-info")
        self.assertTrue(os.access(os.path.join(back, "pkg", "bin", "tool"), os.X_OK))

    def bad_wheel(self, members):
        wheel = os.path.join(self.tmp, "bad.whl")
        with zipfile.ZipFile(wheel, "w") as zf:
            for name in members:
                zf.writestr(name, b"x")
        return wheel

    def test_a_member_that_leaves_the_tree_is_refused(self):
        for name in ("../evil", "/etc/evil", "pkg/../../evil", "pkg\\..\\evil"):
            wheel = self.bad_wheel(["pkg-1.dist-info/METADATA", name])
            with self.assertRaisesRegex(ValueError, "leaves the wheel"):
                shardpack_wheel.unpack(wheel, os.path.join(self.tmp, "out"))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "evil")))

    def test_one_dist_info_or_refused(self):
        for members in (["pkg/a"], ["a-1.dist-info/METADATA", "b-1.dist-info/METADATA"]):
            with self.assertRaisesRegex(ValueError, "not one"):
                shardpack_wheel.unpack(self.bad_wheel(members), os.path.join(self.tmp, "o"))

    def test_a_link_is_refused_and_no_partial_wheel_is_left(self):
        root = self.tree()
        os.symlink("/etc/passwd", os.path.join(root, "pkg", "link"))
        wheel = os.path.join(self.tmp, "pkg-1-py3-none-any.whl")
        with self.assertRaisesRegex(ValueError, "link cannot go into a wheel"):
            shardpack_wheel.pack(root, "pkg-1.dist-info", wheel)
        self.assertEqual([n for n in os.listdir(self.tmp) if n.endswith((".whl", ".partial"))],
                         [])

    def test_links_at_the_wheel_names_are_not_followed(self):
        wheel = os.path.join(self.tmp, "out", "pkg-1-py3-none-any.whl")
        target = plant_links(os.path.dirname(wheel), ["pkg-1-py3-none-any.whl.partial",
                                                      "pkg-1-py3-none-any.whl"])
        shardpack_wheel.pack(self.tree(), "pkg-1.dist-info", wheel)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b"target\n")
        self.assertFalse(os.path.islink(wheel))
        self.assertEqual(stat.S_IMODE(os.stat(wheel).st_mode), 0o666 & ~self.umask())
        with zipfile.ZipFile(wheel) as zf:
            self.assertIn("pkg-1.dist-info/RECORD", zf.namelist())

    @staticmethod
    def umask():
        mask = os.umask(0)
        os.umask(mask)
        return mask


class BaseSet(unittest.TestCase):
    def test_glibc_and_the_cxx_runtime_only(self):
        for name in ("libc.so.6", "libm.so.6", "libpthread.so.0", "ld-linux-x86-64.so.2",
                     "libstdc++.so.6", "libgcc_s.so.1", "linux-vdso.so.1", "libcuda.so.1"):
            self.assertTrue(shardpack_bundle.is_base(name), name)
        for name in ("libz.so.1", "libhdf5_serial.so.103", "libcudart.so.13", "libcrypt.so.1",
                     "libstdc++-abc.so.6", "libc.so.6.evil", "libgomp.so.1"):
            self.assertFalse(shardpack_bundle.is_base(name), name)

    def test_bundled_names_keep_the_version_and_differ_by_content(self):
        tmp = tempfile.mkdtemp()
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        for path, data in ((a, b"one"), (b, b"two")):
            with open(path, "wb") as f:
                f.write(data)
        na = shardpack_bundle.bundled_name("libhdf5_serial.so.103", a)
        nb = shardpack_bundle.bundled_name("libhdf5_serial.so.103", b)
        self.assertRegex(na, r"^libhdf5_serial-[0-9a-f]{8}\.so\.103$")
        self.assertNotEqual(na, nb)


if __name__ == "__main__":
    unittest.main()
